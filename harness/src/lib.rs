//! killpoint: SIGKILLs an agent runtime at named boundaries and proves, from a fake world's
//! ledgers, that no crash became a duplicate side effect, a lost delivery or a policy breach.
//!
//! The folders follow one scenario's trip, each layer importing only the layers before it
//! (`ARCHITECTURE.md` at the repository root is the map; `tests/layers.rs` keeps it true):
//!
//! - [`model`]: the words every part shares — the boundary list, the invariant list, the
//!   reference runtime's broken variants. [`tracer`]: the `killpoint-tracer` process (ptrace and
//!   seccomp), which imports nothing else of the crate.
//! - [`scenario`]: scenario files, read and written, and the standard set.
//! - [`run`]: one scenario against a runtime — the driver, each incarnation, the runtime's API, the
//!   probe, the tracer's harness end, the merged timeline.
//! - [`judge`]: the checker, one file per family of invariants, and contract-rule coverage.
//! - [`report`]: what people and machines read — stories, certificates, HTML, the checklist,
//!   the evidence a kept run holds.
//! - [`search`]: workloads searched rather than written — explore and random.
//! - [`cli`]: each subcommand's logic for `main.rs`; [`trials`]: the `cargo test` front end.
//! - The runtime contract is `CONTRACT.md` at the repository root.

pub mod cli;
pub mod judge;
pub mod model;
pub mod report;
pub mod run;
pub mod scenario;
pub mod search;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod tracer;
pub mod trials;

pub use judge::{Verdict, Violation, check, run_scenario};
pub use model::boundary::Boundary;
pub use model::invariant::Invariant;
pub use run::driver::{Happening, Hit, Run, RunOptions};
pub use run::incarnation::{Target, reference_runtime};
pub use scenario::Scenario;
pub use scenario::standard::ScenarioSet;
