//! The workspace's integration tests that use `#[test]`, one module per file of `tests/`, built
//! as one binary. Most of their time is waiting (a broken runtime's deadline waited out, a
//! runtime's start-up, a wheel installed): as one binary, one test's wait is another's turn, where
//! 23 binaries run one after another by `cargo test` waited in turn (85 s of a cold suite; 22
//! links fewer, too). The trials that are not `#[test]`s (`harness = false`: scenarios, syscalls,
//! explore, services, frameworks, model_client, third_party) are binaries of their own, and so is
//! `wheel`: its build runs cargo, which links `target/debug/killpoint-tracer` anew even when
//! nothing changed, and a traced test beside it then found no tracer there (seen). As its own
//! binary it runs after this one has ended.
//!
//! One file's tests: `cargo test --test integration fencing::`.
//!
//! They run twice as many at once as there are cores, as the trials binaries do
//! (`killpoint::trials::arguments`): measured on 2 cores, 70 s at 4 at once, 90 s at libtest's
//! default of 2 (no faster than the 23 binaries in turn). `RUST_TEST_THREADS` or
//! `--test-threads` still say otherwise.

mod after_settled;
mod api;
mod bad_scenarios;
mod broken_rules;
mod built_states;
mod certify;
mod checker_proofs;
mod ci_run;
mod concurrency;
mod deadlines;
mod fencing;
mod hostile;
mod kill_slack;
mod layers;
mod only_new_shapes;
mod policy_in_flight;
mod power_loss_commits;
mod random;
mod report;
mod restore;
mod rule_checks;
mod schedules;
mod verdicts;
/// The runs written by hand that `kill_slack` and `policy_in_flight` judge.
mod written_run;

/// `killpoint::trials::before_libtest`: the tests' threads and interpreter, set before libtest reads them.
#[ctor::ctor(unsafe)]
fn before_libtest() {
    // SAFETY: before main, on the one thread there is.
    unsafe { killpoint::trials::before_libtest() }
}
