//! The checker's slack for what a kill may leave unrecorded, proven both ways on runs written by
//! hand (the ledger and the harness's marks of a real run's shape, no runtime started): a count
//! that a kill may legitimately have lost passes, and the same count with no kill to lose it, or
//! one more than the kills could lose, fails.
//!
//! Each run is the story of CONTRACT.md's rules told entry by entry: a send is preceded by an
//! allowed destination check in its own incarnation (§8-3), so a check with no receipt after it,
//! in an incarnation that was then killed, is a send whose `SENT` may have been committed and
//! whose request never left.

use fake_tool::{Effect, Event, PolicyAnswer, Response, Subject};
use killpoint::run::client::OperationReport;
use killpoint::{Happening, Hit, Invariant, Run, Scenario, check};
use serde_json::{Value, json};
use std::path::Path;

use crate::written_run::Story;

impl Story {
    fn submitted(&mut self, op: &str) {
        self.mark(Happening::Submitted { operation: op.to_owned() });
        self.mark(Happening::Answered { operation: op.to_owned(), status: 202 });
    }

    /// An allowed tool check, then the call the provider applied and answered `200`.
    fn charged(&mut self, op: &str, call: u32) {
        self.checked(op, Subject::Tool("charge_card".into()), PolicyAnswer::Allowed);
        self.entry(Event::ProviderCall {
            tool: "charge_card".into(),
            operation: Some(op.to_owned()),
            idempotency_key: Some(op.to_owned()),
            call,
            arguments: None,
            effect: Effect::Applied(format!("ref-{op}")),
            response: Response::Sent(200),
            result: Some(json!({"charged": op})),
        });
    }

    fn looked_up(&mut self, op: &str) {
        self.entry(Event::ProviderLookup {
            tool: "charge_card".into(),
            operation: Some(op.to_owned()),
            by_key: Some(op.to_owned()),
            by_ref: None,
            found: true,
            status: 200,
            injected: None,
        });
    }

    /// An allowed destination check, and the send it allowed answered `status`.
    fn sent(&mut self, op: &str, destination: &str, status: u16, applied: bool) {
        self.allowed_send(op, destination);
        self.received(op, destination, status, applied);
    }

    fn allowed_send(&mut self, op: &str, destination: &str) {
        self.checked(op, Subject::Destination(destination.into()), PolicyAnswer::Allowed);
    }

    fn received(&mut self, op: &str, destination: &str, status: u16, applied: bool) {
        self.entry(Event::ConsumerReceipt {
            destination: destination.into(),
            operation: Some(op.to_owned()),
            idempotency_key: Some(format!("{op}:{destination}")),
            applied,
            status,
            payload: json!({"operation_id": op, "provider_ref": format!("ref-{op}"), "result": {"charged": op}}),
        });
    }

    fn judged_on(self, reports: Vec<Value>, hits: Vec<Hit>, metrics: Option<String>) -> Run {
        let reports = reports
            .into_iter()
            .map(|r| {
                let report: OperationReport = serde_json::from_value(r).expect("a report of the contract's shape");
                (report.operation_id.clone(), report)
            })
            .collect();
        self.run("kill-slack", reports, hits, metrics)
    }
}

/// A charge's report: succeeded after `attempts`, each destination with its state and sends.
fn report(op: &str, attempts: u32, deliveries: &[(&str, &str, u32)]) -> Value {
    json!({
        "operation_id": op,
        "execution": "SUCCEEDED",
        "attempts": attempts,
        "idempotency_key": op,
        "provider_ref": format!("ref-{op}"),
        "result": {"charged": op},
        "deliveries": deliveries.iter().map(|(d, state, n)| json!({
            "destination": d, "state": state, "attempts": n, "idempotency_key": format!("{op}:{d}")
        })).collect::<Vec<_>>(),
        "audit": [{"event": "intent_recorded", "detail": ""}],
    })
}

fn scenario(text: &str) -> Scenario {
    Scenario::parse(Path::new("kill_slack.toml"), text).expect("the test's scenario is valid")
}

/// One charge delivered to two destinations, killed at its ledger send's `after_delivery_send`.
const TWO_DESTINATIONS: &str = r#"
description = "one charge, two destinations sent side by side, killed after the ledger's send"
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger", "mailer"]
expect = "succeeded"
[[fault]]
at = "after_delivery_send"
operation = "charge"
destination = "ledger"
"#;

fn violations_of(run: &Run, scenario: &Scenario, invariant: Invariant) -> Vec<String> {
    check(scenario, run).violations.into_iter().filter(|v| v.invariant == invariant).map(|v| v.message).collect()
}

/// The issue-17 story: the runtime sends to both destinations at once; the kill at the ledger's
/// `after_delivery_send` lands after mailer's `SENT` commit and before its request. The next
/// incarnation sends mailer again and counts it (§6): 2 sends, 1 receipt — truthful.
#[test]
fn a_send_in_flight_beside_the_killed_one_may_count_one_more() {
    let mut story = Story::new();
    story.submitted("charge");
    story.charged("charge", 1);
    story.allowed_send("charge", "mailer"); // SENT committed; its request never left
    story.sent("charge", "ledger", 202, true); // the kill is at this send's answer
    story.killed();
    story.sent("charge", "ledger", 202, false);
    story.sent("charge", "mailer", 202, true);
    let reports = vec![report("charge", 1, &[("ledger", "ACKED", 2), ("mailer", "ACKED", 2)])];
    let run = story.judged_on(reports, vec![Hit::Exact], None);
    let found = violations_of(&run, &scenario(TWO_DESTINATIONS), Invariant::TruthfulStatus);
    assert!(found.is_empty(), "a send in flight at the kill may count once more than received: {found:#?}");
}

/// The same count with the mailer's send not in flight at the kill (its check came after the
/// restart): nothing was lost, so 2 sends against 1 receipt is a miscount.
#[test]
fn a_send_counted_twice_with_nothing_in_flight_fails() {
    let mut story = Story::new();
    story.submitted("charge");
    story.charged("charge", 1);
    story.sent("charge", "ledger", 202, true);
    story.killed();
    story.sent("charge", "ledger", 202, false);
    story.sent("charge", "mailer", 202, true);
    let reports = vec![report("charge", 1, &[("ledger", "ACKED", 2), ("mailer", "ACKED", 2)])];
    let run = story.judged_on(reports, vec![Hit::Exact], None);
    let found = violations_of(&run, &scenario(TWO_DESTINATIONS), Invariant::TruthfulStatus);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("reports 2 send(s) to `mailer` but that consumer received 1"), "{}", found[0]);
}

/// Three charges reconciling side by side when the kill lands: each lookup reached the provider
/// and none was written down. The next incarnation looks each up again. A runtime's durable
/// reconciliation counter then shows 3 of the 6 lookups; 3 were lost, one per lookup in flight.
const THREE_RECONCILING: &str = r#"
description = "three charges reconciled at once, killed while their lookups are answered"
[[operation]]
id = "a"
tool = "charge_card"
expect = "succeeded"
wave = 1
[[operation]]
id = "b"
tool = "charge_card"
expect = "succeeded"
wave = 1
[[operation]]
id = "c"
tool = "charge_card"
expect = "succeeded"
wave = 1
"#;

fn reconciling(claimed: u32, lookups_in_flight: bool) -> Vec<String> {
    let mut story = Story::new();
    for op in ["a", "b", "c"] {
        story.submitted(op);
    }
    for op in ["a", "b", "c"] {
        story.charged(op, 1);
    }
    story.killed();
    for op in ["a", "b", "c"] {
        story.looked_up(op);
    }
    if !lookups_in_flight {
        // Each lookup answered and recorded: the incarnation went on to its next exchange.
        for op in ["a", "b", "c"] {
            story.checked(op, Subject::Tool("charge_card".into()), PolicyAnswer::NoDecision);
        }
    }
    story.killed();
    for op in ["a", "b", "c"] {
        story.looked_up(op);
    }
    let metrics = format!(
        "killpoint_reconciliations_total{{outcome=\"found\"}} {claimed}\nkillpoint_refusals_total{{reason=\"policy\"}} 0\n"
    );
    let reports = ["a", "b", "c"].map(|op| report(op, 1, &[])).to_vec();
    let run = story.judged_on(reports, Vec::new(), Some(metrics));
    violations_of(&run, &scenario(THREE_RECONCILING), Invariant::TruthfulStatus)
}

#[test]
fn three_lookups_in_flight_at_one_kill_may_all_go_unrecorded() {
    let found = reconciling(3, true);
    assert!(found.is_empty(), "3 of 6 lookups recorded, 3 in flight at the second kill: {found:#?}");
}

#[test]
fn lookups_answered_before_the_kill_must_be_counted() {
    let found = reconciling(3, false);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].contains("GET /metrics says 3 reconciliation(s); the ledgers show 6"), "{}", found[0]);
}

/// A delivery that failed three times, its fourth send's `SENT` committed when the kill lands: the
/// next incarnation sends it again and counts it — the fifth send — and, refused once more, gives
/// up. The consumer saw 4: dead-lettered after exactly DELIVERY_MAX_ATTEMPTS sends (§6-5).
const DEAD_LETTER: &str = r#"
description = "a mailer that always fails; the runtime is killed while the fourth send is in flight"
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["mailer"]
expect = "succeeded"
"#;

fn dead_lettered(fourth_in_flight: bool) -> Vec<String> {
    let mut story = Story::new();
    story.submitted("charge");
    story.charged("charge", 1);
    let sends = if fourth_in_flight { 3 } else { 4 };
    for _ in 0..sends {
        story.sent("charge", "mailer", 503, false);
    }
    if fourth_in_flight {
        story.allowed_send("charge", "mailer");
    }
    story.killed();
    let counted = if fourth_in_flight {
        story.sent("charge", "mailer", 503, false);
        5
    } else {
        4
    };
    let mut reports = vec![report("charge", 1, &[("mailer", "DEAD_LETTERED", counted)])];
    reports[0]["deliveries"][0]["last_error"] = json!(format!("send {counted}: 503"));
    let run = story.judged_on(reports, Vec::new(), None);
    let scenario = scenario(DEAD_LETTER);
    let mut found = violations_of(&run, &scenario, Invariant::DeadLetterBound);
    found.extend(violations_of(&run, &scenario, Invariant::TruthfulStatus));
    found
}

#[test]
fn a_send_in_flight_at_a_kill_counts_toward_the_dead_letter_bound() {
    let found = dead_lettered(true);
    assert!(found.is_empty(), "4 received + 1 send in flight at the kill = 5 sends: {found:#?}");
}

#[test]
fn a_dead_letter_after_fewer_sends_with_nothing_in_flight_fails() {
    let found = dead_lettered(false);
    assert!(found.iter().any(|m| m.contains("DEAD_LETTERED") && m.contains("received it 4 time(s)")), "{found:#?}");
}
