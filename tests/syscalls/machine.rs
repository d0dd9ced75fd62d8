//! Machine crashes (`--crash machine`, issue 18): the data dir keeps only what was synced.

use super::*;

/// A machine crash (`--crash machine`, issue 18): the data dir keeps only what was synced.
fn machine_crash() -> RunOptions {
    RunOptions { crash: killpoint::model::crash::Crash::Machine, ..traced_black_box() }
}

/// A runtime whose store never syncs (`--broken no-sync`, SQLite `synchronous=OFF`) survives
/// every process kill, which keeps the page cache, and loses the intent its `202` promised when
/// the machine goes down with it. The reference, which syncs every commit, passes both.
pub fn a_store_that_never_syncs_loses_the_acknowledged_intent_only_in_a_machine_crash() {
    needs_tracing();
    let scenario = scenario("after_submit");
    let story = |v: &killpoint::Verdict, r: &killpoint::Run| killpoint::report::story::story(&scenario, v, r);
    let (verdict, run) = run_scenario(&scenario, &broken("no-sync"), &traced_black_box()).expect("it runs");
    assert!(verdict.passed(), "a process crash keeps the page cache: {}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &broken("no-sync"), &machine_crash()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::IntentDurable), "{}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &reference(), &machine_crash()).expect("it runs");
    assert!(verdict.passed(), "the reference syncs every commit: {}", story(&verdict, &run));
}

/// Another design of the same mistake and of its fix: a Python runtime with an engine database
/// beside its store (rollback journal). Syncing, it survives the power loss; with `--no-sync`
/// neither database syncs, and the acknowledged intent is gone.
pub fn an_engine_runtime_that_never_syncs_loses_the_acknowledged_intent_in_a_machine_crash() {
    let (engine, no_sync) = (engine_fixture(&[]), engine_fixture(&["--no-sync"]));
    let scenario = scenario("after_submit");
    let story = |v: &killpoint::Verdict, r: &killpoint::Run| killpoint::report::story::story(&scenario, v, r);
    let (verdict, run) = run_scenario(&scenario, &engine, &machine_crash()).expect("it runs");
    assert!(verdict.passed(), "{}", story(&verdict, &run));
    let (verdict, run) = run_scenario(&scenario, &no_sync, &machine_crash()).expect("it runs");
    assert!(verdict.failed_invariants().contains(&killpoint::Invariant::IntentDurable), "{}", story(&verdict, &run));
}
