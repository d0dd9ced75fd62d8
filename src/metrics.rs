//! The seed's monitoring signals at `GET /metrics`, in the Prometheus text format (encoded by the
//! `prometheus-client` crate).
//!
//! Every value is computed from the store when scraped, not counted in memory: a counter kept in
//! memory starts again at zero after every crash, and the crashes are what these signals are for.
//! A heartbeat proves little; these say whether the durable state is moving.
//!
//! - `killpoint_executions{state}` and `killpoint_execution_age_seconds{state}`: operations in
//!   each execution state (`paused` apart) and the age of the oldest — `UNKNOWN` above all.
//! - `killpoint_delivery_age_seconds{destination}`: the oldest delivery not yet acknowledged or
//!   dead-lettered, since its execution was confirmed.
//! - `killpoint_reconciliations_total{outcome}`: lookups after an unknown outcome, by answer
//!   (`found`, `not_found`, `failed`).
//! - `killpoint_refusals_total{reason}`: attempts refused by policy (`policy`), and operations
//!   paused because no lookup could settle them (`no_lookup`).
//! - `killpoint_dead_letters{destination}`: deliveries dead-lettered.
//! - `killpoint_confirmation_to_ack_seconds`: execution confirmed → delivery acknowledged.

use crate::broken::Broken;
use crate::model::{AuditEvent, DeliveryState, ExecutionState};
use crate::store::{MonitoringFacts, Store};
use anyhow::Result;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;

fn label(name: &str, value: &str) -> Labels {
    vec![(name.to_owned(), value.to_owned())]
}

/// The metrics text, from the store as it is now. `started` is when this incarnation started, on
/// the store's clock (only the broken variant looks at it).
pub fn render(store: &Store, started: f64, broken: Option<Broken>) -> Result<String> {
    let facts = store.monitoring_facts()?;
    let mut registry = Registry::default();
    let confirmed = confirmations(&facts);
    register_executions(&mut registry, &facts);
    register_deliveries(&mut registry, &facts, &confirmed, started, broken);
    register_reconciliations_and_refusals(&mut registry, &facts);
    register_confirmation_to_ack(&mut registry, &facts, &confirmed);

    let mut text = String::new();
    encode(&mut text, &registry)?;
    Ok(text)
}

/// `killpoint_executions` and `killpoint_execution_age_seconds`.
fn register_executions(registry: &mut Registry, facts: &MonitoringFacts) {
    let executions = Family::<Labels, Gauge>::default();
    let ages = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    // Every state is present, at zero when empty: a graph of UNKNOWN shows its zero too.
    let states = ExecutionState::ALL.iter().map(|s| s.as_str().to_ascii_lowercase()).chain(["paused".to_owned()]);
    for state in states {
        let _ = executions.get_or_create(&label("state", &state));
        let _ = ages.get_or_create(&label("state", &state));
    }
    for (state, paused, since) in &facts.operations {
        let name = if *paused { "paused".to_owned() } else { state.as_str().to_ascii_lowercase() };
        executions.get_or_create(&label("state", &name)).inc();
        let age = ages.get_or_create(&label("state", &name));
        let this = (facts.now - since).max(0.0);
        if this > age.get() {
            age.set(this);
        }
    }
    registry.register("killpoint_executions", "Operations in each execution state (paused apart)", executions);
    registry.register(
        "killpoint_execution_age_seconds",
        "Age of the oldest operation in each execution state; UNKNOWN above all",
        ages,
    );
}

/// `killpoint_delivery_age_seconds` and `killpoint_dead_letters`.
fn register_deliveries(
    registry: &mut Registry,
    facts: &MonitoringFacts,
    confirmed: &BTreeMap<&str, f64>,
    started: f64,
    broken: Option<Broken>,
) {
    let delivery_ages = Family::<Labels, Gauge<f64, AtomicU64>>::default();
    let dead_letters = Family::<Labels, Gauge>::default();
    for destination in &facts.destinations {
        let _ = delivery_ages.get_or_create(&label("destination", destination));
        let _ = dead_letters.get_or_create(&label("destination", destination));
    }
    for (operation, destination, state) in &facts.deliveries {
        let age = delivery_ages.get_or_create(&label("destination", destination));
        let _ = dead_letters.get_or_create(&label("destination", destination));
        if matches!(state, DeliveryState::Pending | DeliveryState::Sent)
            && let Some(at) = confirmed.get(operation.as_str())
        {
            let this = (facts.now - at).max(0.0);
            if this > age.get() {
                age.set(this);
            }
        }
    }
    for (_, event, detail, at) in &facts.audit {
        if event != AuditEvent::DeliveryDeadLettered.as_str() {
            continue;
        }
        if broken == Some(Broken::MiscountsDeadLetters) && *at < started {
            // BROKEN: dead letters are counted as they happen in this incarnation, in memory;
            // those of earlier incarnations are forgotten at every restart.
            continue;
        }
        // The detail starts with the destination (`mailer: …`).
        let destination = detail.split(':').next().unwrap_or_default();
        dead_letters.get_or_create(&label("destination", destination)).inc();
    }
    registry.register(
        "killpoint_delivery_age_seconds",
        "Age of the oldest delivery not yet acknowledged or dead-lettered, since its execution was confirmed",
        delivery_ages,
    );
    registry.register("killpoint_dead_letters", "Deliveries dead-lettered, by destination", dead_letters);
}

/// `killpoint_reconciliations_total` and `killpoint_refusals_total`.
fn register_reconciliations_and_refusals(registry: &mut Registry, facts: &MonitoringFacts) {
    let reconciliations = Family::<Labels, Counter>::default();
    let refusals = Family::<Labels, Counter>::default();
    for outcome in ["found", "not_found", "failed"] {
        let _ = reconciliations.get_or_create(&label("outcome", outcome));
    }
    for reason in ["policy", "no_lookup"] {
        let _ = refusals.get_or_create(&label("reason", reason));
    }
    let (found, not_found, failed) = lookups(facts);
    reconciliations.get_or_create(&label("outcome", "found")).inc_by(found);
    reconciliations.get_or_create(&label("outcome", "not_found")).inc_by(not_found);
    reconciliations.get_or_create(&label("outcome", "failed")).inc_by(failed);
    for (_, event, detail, _) in &facts.audit {
        let reason = if event == AuditEvent::PolicyRefused.as_str() {
            "policy"
        } else if event == AuditEvent::Paused.as_str() {
            // A tool without lookup whose outcome stayed unknown is paused for a person; so is
            // one the policy refused while its outcome was unknown (`policy: …`).
            if detail.starts_with("policy:") { "policy" } else { "no_lookup" }
        } else {
            continue;
        };
        refusals.get_or_create(&label("reason", reason)).inc();
    }
    registry.register(
        "killpoint_reconciliations",
        "Lookups after an unknown outcome, by answer: found, not_found, failed",
        reconciliations,
    );
    registry.register(
        "killpoint_refusals",
        "New attempts refused: by policy, or paused because no lookup can settle the outcome",
        refusals,
    );
}

/// `killpoint_confirmation_to_ack_seconds`.
fn register_confirmation_to_ack(registry: &mut Registry, facts: &MonitoringFacts, confirmed: &BTreeMap<&str, f64>) {
    let to_ack = Histogram::new(exponential_buckets(0.001, 4.0, 10));
    for (operation, event, _, at) in &facts.audit {
        if event == AuditEvent::DeliveryAcked.as_str()
            && let Some(confirmed) = confirmed.get(operation.as_str())
        {
            to_ack.observe((at - confirmed).max(0.0));
        }
    }
    registry.register(
        "killpoint_confirmation_to_ack_seconds",
        "Time from an execution's confirmation to each of its deliveries' acknowledgement",
        to_ack,
    );
}

/// When each succeeded operation's execution was confirmed (its `succeeded` audit entry).
fn confirmations(facts: &MonitoringFacts) -> BTreeMap<&str, f64> {
    facts
        .audit
        .iter()
        .filter(|(_, event, _, _)| event == AuditEvent::Succeeded.as_str())
        .map(|(operation, _, _, at)| (operation.as_str(), *at))
        .collect()
}

/// Lookups by answer, read from the audit trail: after `unknown` (or a failed lookup), the next
/// execution event says what the lookup answered — `succeeded` (found), `not_found`, or
/// `lookup_failed`. A new attempt right after `unknown` (a safely repeatable tool) was no lookup.
fn lookups(facts: &MonitoringFacts) -> (u64, u64, u64) {
    let (mut found, mut not_found, mut failed) = (0, 0, 0);
    let mut awaiting: BTreeMap<&str, bool> = BTreeMap::new();
    for (operation, event, _, _) in &facts.audit {
        let waiting = awaiting.get(operation.as_str()).copied().unwrap_or(false);
        match event.as_str() {
            e if e == AuditEvent::Unknown.as_str() => {
                awaiting.insert(operation, true);
            }
            e if e == AuditEvent::Succeeded.as_str() && waiting => {
                found += 1;
                awaiting.insert(operation, false);
            }
            // A lookup that found nothing is `not_found`, or `failed` once the attempt bound is
            // reached (nothing happened, and no attempt is left).
            e if e == AuditEvent::NotFound.as_str() || (e == AuditEvent::Failed.as_str() && waiting) => {
                not_found += 1;
                awaiting.insert(operation, false);
            }
            e if e == AuditEvent::LookupFailed.as_str() => {
                failed += 1;
                awaiting.insert(operation, true);
            }
            e if e == AuditEvent::Dispatched.as_str()
                || e == AuditEvent::Failed.as_str()
                || e == AuditEvent::Paused.as_str() =>
            {
                awaiting.insert(operation, false);
            }
            _ => {}
        }
    }
    (found, not_found, failed)
}
