//! `killpoint explore`: every crash point of a workload, not only those a scenario author chose.
//!
//! 1. **Record.** The workload runs once with no kill (the scenario's hand-placed kills are
//!    dropped; its world faults — provider answers, lookups, policy, consumers — are kept, they are
//!    how the world behaves). Every boundary occurrence it passes is a crash point: each probe
//!    announcement, each call the provider receives, each `202` the client receives, and without
//!    the probe each answer the fake world gives that it can stop at.
//! 2. **Depth 1.** For each point, the workload runs again with a SIGKILL exactly there (a
//!    `[[fault]]` addressing that occurrence, so the case is an ordinary scenario), and every
//!    invariant is checked.
//!    Over system calls the record run builds the crash state at every point while the tracer
//!    holds it there (`crate::run::built`), and a case runs only the recovery from it ([`built`]);
//!    `--rerun-prefix` re-runs the prefix instead, as boundary points always do.
//! 3. **Depth 2.** For each depth-1 case, each occurrence of its *recovery* (what operations in
//!    flight at the kill did after the restart) is killed too: a crash while reconciling a crash.
//!
//! A point is **pruned** when it provably leaves the same crash state as the point before it in
//! the same run: no byte under the data dir changed and the fake world saw nothing between them
//! ([`Fingerprint`](crate::run::driver::Fingerprint), taken while the runtime is blocked on the
//! probe). A SIGKILL at either leaves the next incarnation the same disk and the same world.
//!
//! With operations in flight together, which points a run passes and which share a crash state
//! depend on thread timing: [`interleaving`] records the workload twice and says, per depth, which
//! points are of this kind (the summary's `operations in flight together` line).
//!
//! Every failing case is a scenario: [`Case::scenario`] is written out as a ready-to-commit file
//! that `killpoint run` replays.
//!
//! The files follow the flow: [`plan`] (the record run and its depth-1 cases) finds points over
//! the named boundaries or over system calls, [`Case`] makes each a scenario, the cases are run and
//! judged into findings, the recoveries of depth 1 give depth 2, and pruning drops the points
//! that leave the same crash state as the one before. This module imports the layers below
//! `search` (model, scenario, run, judge, report), never `random` or `cli`.

pub mod agreement;
mod boundaries;
mod built;
mod case;
mod depth;
mod exploration;
mod finding;
#[cfg(test)]
mod fixtures;
mod interleaving;
mod jobs;
mod options;
mod plan;
mod point;
mod prune;
mod syscalls;
mod untraced;

pub use built::record;
pub use case::{Case, Workload};
pub use exploration::{Exploration, after_kills_wanted, explore};
pub use finding::{CaseStatus, Finding, run_case};
pub use interleaving::Interleaving;
pub use options::{ExploreOptions, Points, default_jobs, shard_of};
pub use plan::{Plan, plan};
pub use point::Point;
pub use prune::{Pruned, pruned_summary};
