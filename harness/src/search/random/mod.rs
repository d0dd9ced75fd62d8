//! Random schedules, shrunk: draws workloads and fault schedules, runs each against a runtime with
//! the real driver and checker, and when one fails, shrinks it (proptest, then dropping each fault
//! it does not need) to a small schedule that still fails and writes it as a scenario file, with
//! the command that reruns it.
//!
//! A drawn case carries the outcome a correct runtime must reach for its schedule ([`expect`]):
//! the reference runtime passes every case, which is what keeps the strategy honest. Shapes whose
//! outcome a correct runtime may legitimately choose (a kill landing on an unrelated operation of
//! the same wave while a tool without lookup is in flight, …) are not drawn.
//!
//! Cases are drawn as genes (numbers and flags) and read into a schedule by walking each
//! operation's flow, so every fault names a boundary occurrence the operation is bound to reach
//! and every shrunk gene still reads into a valid schedule.
//!
//! The files follow a case: [`RandomOptions`] ask for the search, genes are drawn, each
//! operation's flow turns its genes into faults and an expected outcome, the schedule reads them
//! into a scenario, and the runner runs, shrinks and writes the failure. This module imports the
//! layers below `search` (model, scenario, run, judge, report) and `search::replay`, never
//! `explore` or `cli`.

mod flow;
mod genes;
mod options;
mod rerun;
mod runner;
mod schedule;
mod services;

pub use genes::{DESTINATIONS, MAX_FAULTS, TENANTS};
pub use options::{RandomOptions, new_seed, shard_seed};
pub use rerun::rerun_command;
pub use runner::{Failure, RandomOutcome, RunDone, search, search_telling};
pub use schedule::{cases, fault_count};
