//! The policy checks on requests a kill or a revocation caught in flight, proven both ways on runs
//! written by hand (the ledger and the harness's marks of a real run's shape, no runtime started).
//!
//! A runtime that works on several operations at once has requests in flight when the harness
//! revokes a permission and kills it at another operation's boundary:
//!
//! - a request the killed incarnation wrote to its socket before the SIGKILL is recorded by the
//!   world after the harness's `Killed` mark: it is placed by its `Killpoint-Incarnation` stamp,
//!   and the answer that allowed it, given to that incarnation before it died, allowed it
//!   (`policy_checked`);
//! - a send allowed by a check answered before the revocation and received after it was in flight
//!   when the permission was withdrawn (`policy_respected`) — unless it belongs to the work the
//!   runtime announced it was held at, where §7-4 says nothing was in flight.
//!
//! Each passing story has a failing twin a broken runtime would write: the answer reused by the
//! next incarnation, a check stamped after the incarnation's death, a send after a refusal, the
//! held operation's own delivery.

use fake_tool::{Effect, Event, PolicyAnswer, Response, Subject};
use killpoint::run::probe::ProbeMessage;
use killpoint::{Boundary, Happening, Hit, Invariant, Run, Scenario, check};
use serde_json::json;
use std::path::Path;

use crate::written_run::Story;

impl Story {
    fn call_of(&mut self, incarnation: u32, op: &str, tool: &str) {
        self.entry_of(
            incarnation,
            Event::ProviderCall {
                tool: tool.into(),
                operation: Some(op.to_owned()),
                idempotency_key: Some(op.to_owned()),
                call: 1,
                arguments: None,
                effect: Effect::Applied(format!("ref-{op}")),
                response: Response::Sent(200),
                result: Some(json!({"done": op})),
            },
        );
    }

    /// An allowed tool check and the call it allowed, in the running incarnation.
    fn called(&mut self, op: &str, tool: &str) {
        self.checked(op, Subject::Tool(tool.into()), PolicyAnswer::Allowed);
        self.call_of(self.incarnation, op, tool);
    }

    fn receipt_of(&mut self, incarnation: u32, op: &str, destination: &str) {
        self.entry_of(
            incarnation,
            Event::ConsumerReceipt {
                destination: destination.into(),
                operation: Some(op.to_owned()),
                idempotency_key: Some(format!("{op}:{destination}")),
                applied: true,
                status: 202,
                payload: json!({"operation_id": op, "provider_ref": format!("ref-{op}"), "result": {"done": op}}),
            },
        );
    }

    fn revoked(&mut self, destination: &str) {
        let subject = Subject::Destination(destination.into());
        self.entry(Event::Revocation { tenant: "acme".into(), actor: None, subject });
    }

    /// The runtime announced `boundary` for `op` and the harness fired a fault there.
    fn held_at(&mut self, boundary: Boundary, op: &str) {
        let message = ProbeMessage { boundary, operation_id: op.to_owned(), attempt: 1, destination: None };
        self.mark(Happening::Boundary { message, killed: true });
    }

    fn judged(self) -> Run {
        self.run("policy-in-flight", Default::default(), vec![Hit::Exact], None)
    }
}

/// The two operations of `concurrent_wave` the stories need: a charge held at a boundary, and a
/// status update whose ledger delivery goes on beside it.
const WAVE: &str = r#"
description = "a charge held at a boundary while a status update's delivery is in flight"
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"
wave = 1
[[operation]]
id = "status"
tool = "set_status"
destinations = ["ledger"]
expect = "succeeded"
wave = 1
[[fault]]
at = "after_result_write"
operation = "charge"
revoke = ["destination:ledger"]
"#;

fn violations(run: &Run, invariant: Invariant) -> Vec<String> {
    let scenario = Scenario::parse(Path::new("policy_in_flight.toml"), WAVE).expect("the test's scenario is valid");
    check(&scenario, run).violations.into_iter().filter(|v| v.invariant == invariant).map(|v| v.message).collect()
}

const LEDGER: fn() -> Subject = || Subject::Destination("ledger".into());

/// The `before_dispatch.sms.1` story: charge's call was written to the socket by incarnation 1
/// before the kill at another operation's boundary and recorded after the `Killed` mark. The
/// allowing check is recorded before the kill (`before`) or after it (`after`: never answered to
/// a live process), both stamped 1; the call is stamped `call`.
fn late_call(before: bool, after: bool, call: u32) -> Vec<String> {
    let tool = || Subject::Tool("charge_card".into());
    let mut story = Story::new();
    if before {
        story.check_of(1, "charge", tool(), PolicyAnswer::Allowed);
    }
    story.killed();
    if after {
        story.check_of(1, "charge", tool(), PolicyAnswer::Allowed);
    }
    story.call_of(call, "charge", "charge_card");
    violations(&story.judged(), Invariant::PolicyChecked)
}

#[test]
fn a_call_recorded_after_its_incarnations_kill_is_placed_by_its_stamp() {
    let found = late_call(true, false, 1);
    assert!(found.is_empty(), "incarnation 1's call, allowed by its own check, landed after the kill mark: {found:#?}");
}

#[test]
fn an_answer_reused_by_the_next_incarnation_is_still_caught() {
    let found = late_call(true, false, 2);
    assert!(
        found.iter().any(|m| m.contains("`charge` reached the provider")),
        "incarnation 2 called on incarnation 1's answer (§8-3) and passed: {found:#?}"
    );
}

#[test]
fn a_check_recorded_after_its_incarnations_kill_allows_nothing() {
    for call in [1, 2] {
        let found = late_call(false, true, call);
        assert!(!found.is_empty(), "a check stamped 1 recorded after incarnation 1 died allowed a call stamped {call}");
    }
}

/// The `after_result_write.charge.1+revoke_ledger` story: charge is held at its result write;
/// status's ledger send was allowed before the harness revoked the ledger and killed, and its
/// receipt lands after the revocation. `then` is what else the runtime did.
fn held_charge(charge_sends: bool, then: impl FnOnce(&mut Story)) -> Vec<String> {
    let mut story = Story::new();
    story.called("charge", "charge_card");
    story.called("status", "set_status");
    story.checked("status", LEDGER(), PolicyAnswer::Allowed);
    if charge_sends {
        story.checked("charge", LEDGER(), PolicyAnswer::Allowed);
    }
    story.held_at(Boundary::AfterResultWrite, "charge");
    story.revoked("ledger");
    then(&mut story);
    story.killed();
    story.checked("charge", LEDGER(), PolicyAnswer::Refused);
    violations(&story.judged(), Invariant::PolicyRespected)
}

#[test]
fn a_send_allowed_before_a_revocation_and_received_after_it_was_in_flight() {
    let found = held_charge(false, |story| story.receipt_of(1, "status", "ledger"));
    assert!(found.is_empty(), "status's send was allowed before the revocation, in flight when it came: {found:#?}");
}

#[test]
fn a_send_after_a_refusal_is_still_caught() {
    let found = held_charge(false, |story| {
        story.checked("status", LEDGER(), PolicyAnswer::Refused);
        story.receipt_of(1, "status", "ledger");
    });
    assert!(
        found.iter().any(|m| m.contains("`status`")),
        "status sent to a revoked ledger after a refusal: {found:#?}"
    );
}

#[test]
fn the_next_incarnation_sending_on_an_old_answer_is_still_caught() {
    let mut story = Story::new();
    story.called("status", "set_status");
    story.checked("status", LEDGER(), PolicyAnswer::Allowed);
    story.held_at(Boundary::AfterResultWrite, "charge");
    story.revoked("ledger");
    story.killed();
    story.receipt_of(2, "status", "ledger");
    let found = violations(&story.judged(), Invariant::PolicyRespected);
    assert!(found.iter().any(|m| m.contains("`status`")), "incarnation 2 sent on incarnation 1's answer: {found:#?}");
}

#[test]
fn the_held_operations_own_delivery_is_never_in_flight() {
    // §7-4: at `after_result_write` no delivery of the operation has been sent; one allowed and
    // sent while the runtime waited for the answer broke it, and the revocation shows it.
    let found = held_charge(true, |story| story.receipt_of(1, "charge", "ledger"));
    assert!(
        found.iter().any(|m| m.contains("`charge`")),
        "charge's own delivery went out while it was held: {found:#?}"
    );
}
