//! `RunOptions::untraced_after_last_kill` (what `explore` runs its last depth's cases with): the
//! incarnations after the last kill run without the tracer, those before it traced, and a bug the
//! traced kill exposes is still caught.

use super::*;
use killpoint::run::driver::Run;

/// A charge and an SMS in flight together; the world holds the charge's provider answer and the
/// harness kills there (`after_dispatch`), then the tracer kills the second incarnation at its
/// first sync.
fn two_kills() -> Scenario {
    let text = "description = \"d\"\n\
        [[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\nwave = 1\n\
        [[operation]]\nid = \"sms\"\ntool = \"send_sms\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded_or_paused\"\nwave = 1\n\
        [[fault]]\nat = \"after_dispatch\"\noperation = \"charge\"\naction = \"kill\"\n\
        [[syscall_fault]]\nkind = \"sync\"\nwhen = \"before\"\noccurrence = 1\nincarnation = 2\n";
    let mut scenario = Scenario::parse(Path::new("scenarios/two_kills.toml"), text).expect("valid");
    scenario.deadline = scenario.deadline.max(std::time::Duration::from_secs(8));
    scenario
}

/// The incarnations the tracer saw a point of.
fn traced_incarnations(run: &Run) -> std::collections::BTreeSet<u32> {
    run.syscall_points.iter().map(|p| p.incarnation).collect()
}

pub fn the_incarnations_after_the_last_kill_run_untraced() {
    needs_tracing();
    let scenario = two_kills();
    let untraced_after = RunOptions { untraced_after_last_kill: true, ..traced_black_box() };
    let (verdict, run) = run_scenario(&scenario, &reference(), &untraced_after).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(verdict.passed(), "{story}");
    assert_eq!(run.incarnations, 3, "two kills, three incarnations: {story}");
    assert_eq!(run.syscall_hits, [true], "the second incarnation, still traced, was killed at its sync: {story}");
    assert_eq!(traced_incarnations(&run), [1, 2].into(), "the third, after the last kill, untraced: {story}");

    // The same run traced to the end: the option, not the scenario, left the third untraced.
    let (verdict, run) = run_scenario(&scenario, &reference(), &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(verdict.passed(), "{story}");
    assert_eq!(traced_incarnations(&run), [1, 2, 3].into(), "{story}");
}

pub fn a_blind_retry_is_caught_with_the_recovery_untraced() {
    needs_tracing();
    let untraced_after = RunOptions { untraced_after_last_kill: true, ..traced_black_box() };
    let (verdict, run) = run_scenario(&two_kills(), &broken("blind-retry"), &untraced_after).expect("it runs");
    let story = killpoint::report::story::story(&two_kills(), &verdict, &run);
    let failed: Vec<&str> = verdict.failed_invariants().iter().map(|i| i.as_str()).collect();
    assert!(failed.contains(&"no_blind_retry"), "{failed:?}: {story}");
    assert_eq!(traced_incarnations(&run), [1, 2].into(), "{story}");
}
