use std::time::{Duration, SystemTime};

use rusqlite::Connection;
use serde_json::json;

use super::sql::{epoch_millis, from_epoch_millis};
use super::*;
use crate::model::{Effect, Submission};

fn submission(id: &str, destinations: &[&str]) -> Submission {
    serde_json::from_value(json!({
        "operation_id": id,
        "tenant": "acme",
        "actor": "agent-7",
        "tool": { "name": "charge_card", "kind": "non_idempotent_with_lookup" },
        "arguments": { "amount_cents": 1200 },
        "destinations": destinations,
    }))
    .unwrap()
}

fn effect() -> Effect {
    Effect { provider_ref: "charge_card-000001".into(), result: json!({ "charge_id": 1 }) }
}

/// Submits and dispatches attempt 1, as the worker would.
fn dispatched(store: &Store, id: &str, destinations: &[&str]) -> Operation {
    let submission = submission(id, destinations);
    store.submit(&submission, "hash").unwrap();
    store.record_dispatch(id, 1, submission.idempotency_key()).unwrap();
    store.operation(id).unwrap().unwrap()
}

fn deliveries(store: &Store, id: &str) -> Vec<Delivery> {
    store.snapshot(id).unwrap().unwrap().deliveries
}

fn events(store: &Store, id: &str) -> Vec<String> {
    store.snapshot(id).unwrap().unwrap().audit.into_iter().map(|entry| entry.event).collect()
}

#[test]
fn resubmission_is_idempotent_and_a_different_body_conflicts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    let op = submission("op-1", &["ledger"]);

    assert_eq!(store.submit(&op, "h1").unwrap(), Submitted::Created);
    assert_eq!(store.submit(&op, "h1").unwrap(), Submitted::AlreadyKnown(ExecutionState::IntentRecorded));
    assert_eq!(store.submit(&op, "h2").unwrap(), Submitted::Conflict);
    assert_eq!(events(&store, "op-1"), ["intent_recorded"]);
}

#[test]
fn dispatched_becomes_unknown_in_the_next_incarnation() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path(), 1).unwrap();
        dispatched(&store, "op-1", &[]);
        // Dropped without any shutdown, as after a SIGKILL.
    }
    let store = Store::open(dir.path(), 1).unwrap();
    let recovered = store.recover_interrupted(SystemTime::now()).unwrap();

    assert_eq!(recovered.unknown, ["op-1"]);
    let op = store.operation("op-1").unwrap().unwrap();
    assert_eq!(op.execution, ExecutionState::Unknown);
    assert_eq!(op.attempts, 1, "the attempt number survives the restart");
    assert_eq!(op.idempotency_key, "op-1");
    assert_eq!(events(&store, "op-1"), ["intent_recorded", "dispatched", "unknown"]);
    assert!(store.operations_to_work(ExecutionState::Unknown).unwrap().len() == 1);
}

#[test]
fn success_and_its_deliveries_are_written_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    let op = dispatched(&store, "op-1", &["mailer", "ledger"]);
    let now = SystemTime::now();

    store.record_success(&op, &effect(), now).unwrap();

    let snapshot = store.snapshot("op-1").unwrap().unwrap();
    assert_eq!(snapshot.operation.execution, ExecutionState::Succeeded);
    assert_eq!(snapshot.operation.provider_ref.as_deref(), Some("charge_card-000001"));
    assert_eq!(snapshot.operation.result, Some(json!({ "charge_id": 1 })));
    let deliveries: Vec<_> = snapshot
        .deliveries
        .iter()
        .map(|d| (d.destination.as_str(), d.state, d.attempts, d.idempotency_key.as_str()))
        .collect();
    assert_eq!(
        deliveries,
        [("ledger", DeliveryState::Pending, 0, "op-1"), ("mailer", DeliveryState::Pending, 0, "op-1"),]
    );
    assert_eq!(store.due_deliveries(now).unwrap().len(), 2);
}

#[test]
fn a_failing_outbox_write_leaves_no_success_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    // The API refuses duplicate destinations; here one makes the second outbox insert fail
    // after the success has been written inside the same transaction.
    let op = dispatched(&store, "op-1", &["ledger", "ledger"]);

    assert!(store.record_success(&op, &effect(), SystemTime::now()).is_err());

    let snapshot = store.snapshot("op-1").unwrap().unwrap();
    assert_eq!(snapshot.operation.execution, ExecutionState::Dispatched);
    assert_eq!(snapshot.operation.provider_ref, None);
    assert!(snapshot.deliveries.is_empty());
    assert_eq!(events(&store, "op-1"), ["intent_recorded", "dispatched"]);
}

#[test]
fn a_recorded_success_cannot_be_recorded_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    let op = dispatched(&store, "op-1", &["ledger"]);
    store.record_success(&op, &effect(), SystemTime::now()).unwrap();

    let error = store.record_success(&op, &effect(), SystemTime::now()).unwrap_err();
    assert!(error.to_string().contains("it is SUCCEEDED"), "{error}");
    assert!(store.record_dispatch("op-1", 2, "op-1").is_err());
    assert_eq!(deliveries(&store, "op-1").len(), 1);
}

#[test]
fn sent_deliveries_are_due_again_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let later = SystemTime::now() + Duration::from_secs(3600);
    {
        let store = Store::open(dir.path(), 1).unwrap();
        let op = dispatched(&store, "op-1", &["ledger"]);
        store.record_success(&op, &effect(), SystemTime::now()).unwrap();
        let delivery = deliveries(&store, "op-1").remove(0);
        store.record_delivery_sent(&delivery, 1, "op-1").unwrap();
        // Even if the row said "not before an hour from now", a restart sends it at once.
        store.postpone_delivery(&delivery, later).unwrap();
    }
    let store = Store::open(dir.path(), 1).unwrap();
    let now = SystemTime::now();
    let recovered = store.recover_interrupted(now).unwrap();

    assert_eq!(recovered.resend, [("op-1".to_owned(), "ledger".to_owned())]);
    let due = store.due_deliveries(now).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].state, due[0].attempts), (DeliveryState::Sent, 1));
}

#[test]
fn failed_sends_wait_and_then_dead_letter() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    let op = dispatched(&store, "op-1", &["ledger"]);
    let now = SystemTime::now();
    store.record_success(&op, &effect(), now).unwrap();
    let delivery = deliveries(&store, "op-1").remove(0);

    store.record_delivery_sent(&delivery, 1, "op-1").unwrap();
    let retry_at = now + Duration::from_secs(60);
    store.schedule_delivery_retry(&delivery, retry_at, "HTTP 503").unwrap();
    assert!(store.due_deliveries(now).unwrap().is_empty());
    assert_eq!(store.delivery_schedule().unwrap(), [("op-1".to_owned(), from_epoch_millis(epoch_millis(retry_at)))]);

    store.dead_letter(&delivery, "policy: revoked").unwrap();
    let delivery = deliveries(&store, "op-1").remove(0);
    assert_eq!(delivery.state, DeliveryState::DeadLettered);
    assert_eq!(delivery.last_error.as_deref(), Some("policy: revoked"));
    assert!(store.delivery_schedule().unwrap().is_empty());
}

#[test]
fn a_store_from_another_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    Store::open(dir.path(), 1).unwrap();
    let conn = Connection::open(dir.path().join("runtime.sqlite3")).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);

    let error = Store::open(dir.path(), 1).err().unwrap();
    assert!(error.to_string().contains("schema version 99"), "{error}");
}

/// A status read parses nothing again: rusqlite clears a cached statement's bindings as it goes
/// back to the cache, which expires a statement whose plan used a bound value (the bundled SQLite
/// has STAT4); the store's plans use none (QPSG), so each statement is prepared once.
#[test]
fn reading_an_operation_again_prepares_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), 1).unwrap();
    dispatched(&store, "a", &["ledger", "mailer"]);
    dispatched(&store, "b", &["ledger"]);
    for id in ["a", "b", "a", "b", "a"] {
        store.snapshot(id).unwrap().unwrap();
    }
    let conn = store.conn();
    let sql = format!("SELECT {} FROM deliveries WHERE operation_id = ?1 ORDER BY destination", sql::DELIVERY_COLUMNS);
    let statement = conn.prepare_cached(&sql).unwrap();
    assert_eq!(statement.get_status(rusqlite::StatementStatus::RePrepare), 0, "re-prepared on a later read");
}
