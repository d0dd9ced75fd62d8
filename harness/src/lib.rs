//! killpoint: SIGKILLs an agent runtime at named boundaries and proves, from a fake world's
//! ledgers, that no crash became a duplicate side effect, a lost delivery or a policy breach.
//!
//! - [`boundary`]: the boundaries (where kills land). [`invariant`]: what is proven.
//! - [`scenario`]: scenario files; [`standard`]: the standard ones, embedded. [`driver`]: runs one against a runtime. [`checker`]: judges.
//! - [`incarnation`]: one life of the runtime process (process group, PDEATHSIG, kill sweep).
//!   [`probe`]: the harness end of the boundary probe. [`client`]: the runtime's API.
//! - [`report`]: tables and failure stories. [`certificate`]: JSON and JUnit certificates.
//!   [`trace`]: the merged timeline. [`artifacts`]: where a run keeps its data dir and logs.
//! - [`trials`]: turns a scenario directory into `cargo test` trials (libtest-mimic), and
//!   [`trials::certify_main`] is a third party's whole test target.
//! - [`syscalls`]: the `killpoint-tracer` process: crash points at the runtime's system calls.
//! - The runtime contract is `CONTRACT.md` at the repository root.

pub mod artifacts;
pub mod boundary;
pub mod certificate;
pub mod checker;
pub mod checklist;
pub mod client;
pub mod coverage;
pub mod driver;
pub mod explore;
pub mod html;
pub mod incarnation;
pub mod invariant;
pub mod preflight;
pub mod probe;
pub mod random;
pub mod report;
pub mod scenario;
pub mod scenario_file;
pub mod standard;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod syscalls;
pub mod trace;
pub mod traced;
pub mod trials;
pub mod variants;

pub use boundary::Boundary;
pub use checker::{Verdict, Violation, check};
pub use driver::{Happening, Hit, Run, RunOptions};
pub use incarnation::Target;
pub use invariant::Invariant;
pub use scenario::Scenario;
pub use standard::ScenarioSet;

/// Runs one scenario to a verdict on a fresh single-threaded tokio runtime.
///
/// The runtime is built on the calling thread, so the runtime process is spawned from it: keep the
/// thread alive for the whole call (it is: this blocks), or PDEATHSIG would fire early.
pub fn run_scenario(scenario: &Scenario, target: &Target, options: &RunOptions) -> std::io::Result<(Verdict, Run)> {
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let run = tokio.block_on(driver::run(scenario, target, options))?;
    let verdict = check(scenario, &run);
    Ok((verdict, run))
}

/// The reference runtime built beside the running executable (`target/<profile>/killpoint-runtime`),
/// if it is there. Test executables live one level deeper, in `deps/`.
pub fn reference_runtime() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("killpoint-runtime"), dir.parent()?.join("killpoint-runtime")].into_iter().find(|p| p.is_file())
}
