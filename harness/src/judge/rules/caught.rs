//! What each broken variant of the reference runtime (`killpoint-runtime --broken NAME`,
//! `src/broken.rs`) breaks, scenario by scenario: the rules of the contract its violations name in
//! each standard scenario whose `[[catches]]` name it, under the crash that catch names.
//!
//! This is the one place that says which rules a variant breaks (`tests/broken_rules.rs` runs
//! every catch and holds each variant to these rules, no more and no fewer), and what a
//! scenario's catches show it exercises: a pass of a scenario establishes the rules its catches
//! are known to catch broken here (`exercised`).

use super::table::{Check, RULES};
use crate::model::crash::Crash;
use crate::scenario::Scenario;

/// A variant caught by a standard scenario, and the rules its violations there name.
#[derive(Debug, Clone, Copy)]
pub struct Caught {
    pub broken: &'static str,
    pub scenario: &'static str,
    pub rules: &'static [&'static str],
}

const fn caught(broken: &'static str, scenario: &'static str, rules: &'static [&'static str]) -> Caught {
    Caught { broken, scenario, rules }
}

/// Every `[[catches]]` of the standard scenarios, by variant, in `--list-broken`'s order. A
/// variant no standard scenario catches has no row, and breaks nothing the standard set can show.
pub const CAUGHT: &[Caught] = &[
    // Re-dispatches an unknown outcome at once: across a restart (§4-10), after a 5xx in one
    // incarnation (§4-8), never looked up (§4-11), a tool without lookup not paused (§4-13).
    caught("blind-retry", "after_dispatch", &["§4-10", "§4-11", "§4-13", "§5-1"]),
    caught("blind-retry", "after_provider_success", &["§4-10", "§4-11", "§4-13", "§5-1"]),
    caught("blind-retry", "dispatch_then_success", &["§4-10", "§4-11", "§5-1"]),
    caught("blind-retry", "lookup_unavailable", &["§4-8", "§4-10", "§4-11", "§5-1"]),
    caught("blind-retry", "provider_unavailable", &["§4-8", "§4-11", "§5-1"]),
    caught("fresh-key", "after_dispatch", &["§4-5"]),
    caught("fresh-key", "provider_unavailable", &["§4-5"]),
    // The request before its DISPATCHED: the attempt is never counted (§3-6, §4-4), and the next
    // incarnation, finding INTENT_RECORDED, sends it again unreconciled.
    caught("no-write-ahead", "after_dispatch", &["§3-6", "§4-4", "§4-10", "§4-11", "§4-13", "§5-1"]),
    // A success with no deliveries recorded (§4-6) is never delivered (§6-3) nor settled (§3-10).
    caught("split-outbox", "after_result_write", &["§3-10", "§4-6", "§6-3"]),
    // The call it makes before a delivery retry is an attempt like any other: made without a
    // policy check (§4-1, §8-2, §8-3), nor a DISPATCHED (§3-6, §4-4).
    caught(
        "rerun-on-delivery",
        "after_delivery_send",
        &["§3-6", "§4-1", "§4-4", "§4-14", "§5-1", "§6-6", "§8-2", "§8-3"],
    ),
    caught(
        "rerun-on-delivery",
        "delivery_dead_letter",
        &["§3-6", "§4-1", "§4-4", "§4-14", "§5-1", "§6-6", "§8-2", "§8-3"],
    ),
    caught("fresh-delivery-key", "after_delivery_send", &["§6-2", "§6-3"]),
    caught("fresh-delivery-key", "delivery_dead_letter", &["§6-2"]),
    // The first approval reused: a revoked operation ends otherwise than a refusal makes it end
    // (§4-2; §4-3 for a repeatable tool whose outcome was unknown).
    caught("no-policy-recheck", "after_policy_revocation", &["§4-1", "§4-2", "§4-3", "§8-2", "§8-3", "§8-5"]),
    caught("no-policy-recheck", "revoke_without_kill", &["§4-1", "§4-2", "§8-2", "§8-3", "§8-5"]),
    caught("policy-cache", "attempt_bound", &["§4-1", "§6-7", "§8-2", "§8-3"]),
    caught("policy-cache", "delivery_dead_letter", &["§6-7", "§8-2", "§8-3"]),
    caught("no-backoff", "attempt_bound", &["§6-4"]),
    // Given up a send early, the consumer never applies it (§6-3).
    caught("dead-letter-early", "delivery_dead_letter", &["§6-3", "§6-5"]),
    caught("count-refused-attempt", "after_policy_revocation", &["§3-6"]),
    // Its /metrics counts a reconciliation the provider never saw (§11-2).
    caught("fail-at-bound", "attempt_bound", &["§4-15", "§11-2"]),
    caught("ack-before-durable", "after_submit", &["§3-2", "§3-9"]),
    // The upsert answers 202 to the same body (§3-3) and to another (§3-4).
    caught("submit-upsert", "after_submit", &["§3-3", "§3-4"]),
    caught("retry-on-4xx", "provider_rejects", &["§4-7"]),
    caught("trust-2xx", "unreadable_success", &["§3-8", "§4-8", "§6-1"]),
    caught("lookup-error-as-miss", "lookup_unavailable", &["§4-12", "§5-1"]),
    caught("policy-fail-open", "policy_unavailable", &["§4-1", "§4-2", "§6-7", "§8-2", "§8-4", "§8-5"]),
    caught("one-dispatch-slot", "concurrent_dispatch", &["§4-10", "§4-11", "§5-1"]),
    // A lookup found the charge and a kill took it before it was recorded (§4-11); the next
    // incarnation acts on the failed lookup before it (§4-12).
    caught("restart-after-failed-lookup", "kill_while_reconciling", &["§4-11", "§4-12", "§5-1"]),
    // The outlived incarnation's stale commit (§9-2) undoes the pause of the tool without lookup
    // (§4-13) and a delivery (§6-3).
    caught("no-store-fence", "zombie_worker", &["§4-13", "§6-3", "§9-2"]),
    caught("no-fence-header", "zombie_worker", &["§9-1"]),
    caught("fenced-hangs", "zombie_worker", &["§9-3"]),
    // Frozen just before a request, resumed, refused `409 fenced`: it asks again (§9-3).
    caught("ignores-fence", "frozen_before_a_request", &["§9-3"]),
    caught("result-before-call", "after_dispatch", &["§3-8", "§4-13", "§6-1"]),
    caught("deliver-refused", "revoked_destination", &["§6-7", "§8-2", "§8-5"]),
    caught("miscounts-dead-letters", "monitoring_signals", &["§11-2"]),
    caught("strip-private-arguments", "after_delivery_send", &["§3-1"]),
    caught("truncate-arguments", "after_delivery_send", &["§3-1"]),
    caught("mislabels-delivery-retries", "delivery_dead_letter", &["§11-3"]),
    caught("recreate-data-dir", "missing_data_dir", &["§2-4"]),
    caught("no-sync", "after_submit", &["§3-2", "§3-9", "§7-6"]),
    // Re-decided after the restart: the charge, the SMS and the status update act on a second
    // answer (§12-3), the charge and the SMS twice (§5-1), unreconciled (§4-10, §4-11, §4-13);
    // the ticket's second call is refused for its reused key and taken for a failure (§12-4),
    // which its report then claims though its first call applied (§3-8).
    caught("reask-on-recovery", "model_decides", &["§3-8", "§4-10", "§4-11", "§4-13", "§5-1", "§12-3", "§12-4"]),
    // A task's call without `_killpoint`: not the model's answer, unchanged (§12-2).
    caught("strip-private-arguments", "model_decides", &["§12-2"]),
    // Seen by the tracer, which a machine crash runs under: a file beside the data dir (§2-2), a
    // socket connected to a documentation address (§2-5).
    caught("cache-outside-data-dir", "after_submit", &["§2-2"]),
    caught("phone-home", "after_submit", &["§2-5"]),
    // Under restores only: a key drawn, not derived, is a second key after a backup that predates
    // it (§13-1), and the effect or delivery it lets through again.
    caught("random-key", "restore_before_the_intent", &["§4-5", "§4-10", "§4-11", "§5-1", "§13-1", "§13-3"]),
    caught("rekeyed-outbox", "after_delivery_send", &["§6-2", "§6-3", "§13-1"]),
    // The approval taken for one in force: an attempt no check allowed (§4-1, §8-2, §8-3), a
    // cancelled operation charged (§8-5) instead of refused (§4-2).
    caught("restored-grant", "restore_before_the_revocation", &["§4-1", "§4-2", "§8-2", "§8-3", "§8-5", "§13-5"]),
];

/// The proofs that `rule`'s check can fail: (variant, scenario) for each catch that breaks it.
pub fn proofs(rule: &str) -> Vec<(&'static str, &'static str)> {
    CAUGHT.iter().filter(|c| c.rules.contains(&rule)).map(|c| (c.broken, c.scenario)).collect()
}

/// Every rule `broken` is caught breaking in a standard scenario, in the contract's order.
pub fn broken_by(broken: &str) -> Vec<&'static str> {
    in_contract_order(CAUGHT.iter().filter(|c| c.broken == broken).flat_map(|c| c.rules.iter().copied()))
}

/// Whether some variant is caught breaking `rule`: if none is, no scenario can show that the
/// rule's check would fail, and any full pass is all the evidence there is.
pub fn breakable(rule: &str) -> bool {
    CAUGHT.iter().any(|c| c.rules.contains(&rule))
}

/// The rules a full pass of `scenario` under `crash` establishes: those its `[[catches]]` under
/// that crash are known to catch broken — as [`CAUGHT`] records for a standard scenario's catch,
/// and, for a catch of one's own, every rule [`CAUGHT`] says its variant breaks that one of the
/// catch's invariants checks.
pub fn exercised(scenario: &Scenario, crash: Crash) -> Vec<&'static str> {
    let mut rules = Vec::new();
    for catch in scenario.catches.iter().filter(|c| c.crash == crash) {
        let recorded = CAUGHT.iter().find(|c| c.broken == catch.broken && c.scenario == scenario.name);
        match recorded {
            // Run and held to exactly these by tests/broken_rules.rs.
            Some(c) => rules.extend(c.rules),
            // A catch of one's own: `run` and the trials prove the variant fails the catch's
            // invariants there, so the variant's rules those invariants check.
            None => rules.extend(broken_by(&catch.broken).into_iter().filter(|r| checked_by_any(r, &catch.invariants))),
        }
    }
    in_contract_order(rules.into_iter())
}

/// Whether one of `invariants` (by name) checks `rule` in the coverage table.
fn checked_by_any(rule: &str, invariants: &[String]) -> bool {
    RULES.iter().any(|r| {
        r.id == rule
            && matches!(r.check, Check::Invariants(list) if list.iter().any(|i| invariants.iter().any(|n| n == i.as_str())))
    })
}

fn in_contract_order(rules: impl Iterator<Item = &'static str>) -> Vec<&'static str> {
    let rules: Vec<&str> = rules.collect();
    RULES.iter().map(|r| r.id).filter(|id| rules.contains(id)).collect()
}
