//! Syscall faults addressed from a boundary or a delivery attempt, as explore writes them: kills
//! that cut a request off before it was sent are no false alarm, and an address past the next
//! boundary is the scenario's mistake.

use super::*;

/// `delivery_dead_letter` with a kill at the sync (`occurrence`) after `boundary`.
fn cut_off_at(boundary: &str, occurrence: u32) -> Scenario {
    with_kill("delivery_dead_letter", "sync", occurrence, "before", boundary, "charge")
}

/// A shipped scenario with a kill at the `occurrence`-th system call of `kind` (`when` it runs)
/// since `operation` reached `boundary`, as explore writes it; its `[[catches]]` dropped.
fn with_kill(name: &str, kind: &str, occurrence: u32, when: &str, boundary: &str, operation: &str) -> Scenario {
    let path = root().join(format!("scenarios/{name}.toml"));
    let shipped = std::fs::read_to_string(&path).expect("the shipped scenario");
    let fault = format!(
        "[[syscall_fault]]\nkind = \"{kind}\"\noccurrence = {occurrence}\nwhen = \"{when}\"\n\n[syscall_fault.since]\nboundary = \"{boundary}\"\noperation = \"{operation}\"\noccurrence = 1\n"
    );
    let mut cut_off = Scenario::parse(&path, &format!("{shipped}\n{fault}")).expect("the case parses");
    cut_off.deadline = cut_off.deadline.max(std::time::Duration::from_secs(8));
    cut_off.catches.clear();
    cut_off
}

/// Two kills that cut off a counted request before it was sent (CONTRACT.md section 10, "Counts
/// across a kill"), found by `explore delivery_dead_letter --points syscalls`, where the reference
/// failed 3 of 34 cases and the Python example about 6 of 44:
/// - at the sync that makes the ledger's `SENT` durable (§6-5): the runtime counted a send the
///   ledger never saw, so with the ledger failing twice and a bound of 3 it rightly dead-letters
///   it after two receipts — `delivered_once` owed an event the contract let the runtime give up;
/// - at the sync of the first attempt's `DISPATCHED`: the next incarnation's attempt 2 is the
///   provider's call 1 — the retry label check (§11-3) looked for call 2, found the ledger's send
///   2, and called a true execution retry a delivery retry.
///
/// A runtime that gives up before its count reaches the bound still fails, on `dead_letter_bound`.
pub fn requests_a_kill_cut_off_before_they_were_sent_are_no_false_alarm() {
    needs_tracing();
    for (boundary, occurrence) in [("after_result_write", 1), ("before_dispatch", 2)] {
        let cut_off = cut_off_at(boundary, occurrence);
        let (verdict, run) = run_scenario(&cut_off, &reference(), &traced_black_box()).expect("it runs");
        assert!(
            verdict.passed(),
            "{boundary} sync {occurrence}: {:?}\n{}",
            verdict.violations,
            killpoint::report::story::story(&cut_off, &verdict, &run)
        );
    }
    let cut_off = cut_off_at("after_result_write", 1);
    let (verdict, _) = run_scenario(&cut_off, &broken("dead-letter-early"), &traced_black_box()).expect("it runs");
    assert!(verdict.failed_invariants().iter().any(|i| i.as_str() == "dead_letter_bound"), "{:?}", verdict.violations);
}

/// A kill just after the provider's 422 reached the runtime, before it recorded it: the next
/// incarnation finds nothing by lookup and attempts again, and the provider (its one rejection
/// spent) accepts. `provider_rejects` expected `failed`, and failed the reference on
/// `expected_outcome` (found by `explore provider_rejects --points syscalls`: 2 of 28 cases).
/// Without the kill, a runtime that retries after a 4xx is still caught
/// (`broken::retry_on_4xx::provider_rejects`, tests/scenarios.rs).
pub fn a_rejection_a_kill_took_before_it_was_recorded_is_no_false_alarm() {
    needs_tracing();
    let killed = with_kill("provider_rejects", "answer", 1, "after", "before_dispatch", "charge-refused");
    let (verdict, run) = run_scenario(&killed, &reference(), &traced_black_box()).expect("it runs");
    assert!(verdict.passed(), "{:?}\n{}", verdict.violations, killpoint::report::story::story(&killed, &verdict, &run));
}

/// Issue 32 item 14: a `[[syscall_fault]]` counted since a boundary, past the next boundary the
/// run reached (where the count starts again), is the scenario's mistake: the run says so, with
/// where to count from, and does not blame the runtime (`faults_reached` used to). A fault the run
/// could have reached is still the runtime's to reach.
pub fn a_syscall_fault_counted_past_the_next_boundary_is_the_scenarios_mistake() {
    needs_tracing();
    let text = |occurrence: u32| {
        format!(
            "description = \"d\"\n[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n\
             [[syscall_fault]]\nkind = \"sync\"\nwhen = \"after\"\noccurrence = {occurrence}\nsince = {{ boundary = \"before_dispatch\", operation = \"charge\" }}\n"
        )
    };
    let late = Scenario::parse(Path::new("scenarios/late.toml"), &text(9)).expect("valid");
    let (verdict, _) = run_scenario(&late, &reference(), &traced_black_box()).expect("runs");
    let error =
        verdict.error.as_deref().unwrap_or_else(|| panic!("expected the scenario's mistake, found {verdict:?}"));
    assert!(
        error.contains("cannot be reached in this run") && error.contains("Count from `after_provider_success"),
        "{error}"
    );
    assert!(!verdict.failed_invariants().contains(&killpoint::Invariant::FaultsReached), "{verdict:?}");
    let reachable = Scenario::parse(Path::new("scenarios/early.toml"), &text(1)).expect("valid");
    let (verdict, _) = run_scenario(&reachable, &reference(), &traced_black_box()).expect("runs");
    assert!(verdict.error.is_none() && verdict.passed(), "{verdict:?}");
}

/// Issue 32 item 8: a kill between a dead consumer's retries is addressed by the delivery attempt
/// it follows (`since = { boundary = "after_delivery_send", operation, destination, occurrence }`:
/// the receive that completes the consumer's answer to that attempt), not by a request number
/// counted by hand from the last boundary across every policy check and delivery in between.
pub fn a_kill_between_a_dead_consumers_retries_is_addressed_by_its_delivery_attempt() {
    needs_tracing();
    let text = |since: &str| {
        format!(
            "description = \"d\"\n[runtime]\ndelivery_max_attempts = 3\nretry_base_ms = 10\n\
             [[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\", \"mailer\"]\nexpect = \"succeeded\"\n\
             [[consumer_fault]]\ndestination = \"mailer\"\n\
             [[syscall_fault]]\nkind = \"request\"\nwhen = \"before\"\noccurrence = 2\nsince = {{ {since} }}\n"
        )
    };
    let path = Path::new("scenarios/between_retries.toml");
    let no_destination = Scenario::parse(path, &text("boundary = \"after_delivery_send\", operation = \"charge\""));
    assert!(no_destination.is_err_and(|e| e.to_string().contains("needs the `destination`")));
    let other = Scenario::parse(
        path,
        &text("boundary = \"after_delivery_send\", operation = \"charge\", destination = \"crm\""),
    );
    assert!(other.is_err_and(|e| e.to_string().contains("does not deliver to")));
    // The second request after the mailer's second 503: its third attempt (after the policy check).
    let scenario = Scenario::parse(
        path,
        &text("boundary = \"after_delivery_send\", operation = \"charge\", destination = \"mailer\", occurrence = 2"),
    )
    .expect("valid");
    let (verdict, run) = run_scenario(&scenario, &reference(), &traced_black_box()).expect("it runs");
    let story = killpoint::report::story::story(&scenario, &verdict, &run);
    assert!(verdict.passed() && run.syscall_hits == [true], "{story}");
    let killed_at = run
        .timeline
        .iter()
        .find(|m| matches!(m.happening, killpoint::run::driver::Happening::SyscallKill { .. }))
        .map(|m| m.seq)
        .unwrap_or_else(|| panic!("no kill at a system call: {story}"));
    let to_mailer = |e: &&fake_tool::Entry| matches!(&e.event, fake_tool::Event::ConsumerReceipt { destination, .. } if destination == "mailer");
    let before = run.ledger.iter().filter(to_mailer).filter(|e| e.seq < killed_at).count();
    assert_eq!(before, 2, "killed before the mailer's third attempt: {story}");
    assert!(story.contains("#2 since after_delivery_send #2 of charge to mailer"), "{story}");
}

/// Issue 33: with operations in flight together, a kill counted from a boundary lands after
/// whichever exchange came next, which another operation's may be in one run and not the next.
/// Counted among one operation's exchanges (`operation = "charge"`: the points whose request names
/// it), the kill lands at that operation's exchange in every run, and `--broken blind-retry` is
/// caught at it every time. A mistaken address (an unknown operation, a `since` beside it, a point
/// that is no exchange) is refused where it is written.
pub fn a_kill_counted_among_one_operations_exchanges_lands_there_whatever_runs_beside_it() {
    needs_tracing();
    let text = |fault: &str| {
        format!(
            "description = \"d\"\n\
             [[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\nwave = 1\n\
             [[operation]]\nid = \"sms\"\ntool = \"send_sms\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\nwave = 1\n\
             [[operation]]\nid = \"refund\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\nwave = 1\n\
             [[syscall_fault]]\nkind = \"answer\"\nwhen = \"after\"\noccurrence = 2\nincarnation = 1\n{fault}\n"
        )
    };
    let path = Path::new("scenarios/among_exchanges.toml");
    for (fault, error) in [
        ("operation = \"nobody\"", "which this scenario does not have"),
        ("operation = \"charge\"\nsince = { boundary = \"before_dispatch\", operation = \"charge\" }", "not both"),
    ] {
        let refused = Scenario::parse(path, &text(fault)).map(|_| ()).unwrap_err().to_string();
        assert!(refused.contains(error), "{refused}");
    }
    let sync = text("operation = \"charge\"").replace("kind = \"answer\"", "kind = \"sync\"");
    let refused = Scenario::parse(path, &sync).map(|_| ()).unwrap_err().to_string();
    assert!(refused.contains("names no operation"), "{refused}");

    // The charge's second answer is the provider's (its first is the policy's).
    let scenario = Scenario::parse(path, &text("operation = \"charge\"")).expect("valid");
    for run_number in 1..=3 {
        let (verdict, run) = run_scenario(&scenario, &broken("blind-retry"), &traced_black_box()).expect("it runs");
        let story = killpoint::report::story::story(&scenario, &verdict, &run);
        let killed = run.timeline.iter().find_map(|m| match &m.happening {
            killpoint::run::driver::Happening::SyscallKill { point, .. } => Some(point.clone()),
            _ => None,
        });
        let killed = killed.unwrap_or_else(|| panic!("run {run_number}: no kill at a system call: {story}"));
        assert_eq!(killed.exchange, Some(("charge".to_owned(), 2)), "run {run_number}: {story}");
        assert!(
            verdict.failed_invariants().iter().any(|i| i.as_str() == "no_blind_retry"),
            "run {run_number}: the blind retry after the charge's answer: {story}"
        );
    }
}
