//! The reference runtime's API under bad requests (CONTRACT.md section 3): each is refused with a
//! clear 4xx naming what was expected, and nothing already accepted is lost — not by the bad
//! requests, not by a SIGKILL and restart after them.

use fake_tool::{Clock, World};
use killpoint::run::client::{Client, ExecutionState};
use killpoint::run::incarnation::{Incarnation, Launch, Target};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

struct Live {
    world: World,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

async fn post(live: &Live, api: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let response = live
        .http
        .post(format!("{api}/operations"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn submission(id: &str) -> Value {
    json!({
        "operation_id": id,
        "tenant": "acme",
        "actor": "agent-7",
        "tool": { "name": "charge_card", "kind": "non_idempotent_with_lookup" },
        "arguments": { "_killpoint": { "operation": id } },
        "destinations": ["ledger"],
    })
}

fn with(mut body: Value, field: &str, value: Value) -> String {
    body[field] = value;
    body.to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn bad_requests_are_refused_and_nothing_accepted_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (data, logs) = (dir.path().join("data"), dir.path().join("logs"));
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&logs).unwrap();
    let (world, _points) = World::start(Clock::default()).await.unwrap();
    let env = killpoint::run::driver::environment(&world, &data, &Default::default());
    let target = Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() };
    let launch = Launch { target: &target, env, logs: &logs, probe: None, ready_timeout: Duration::from_secs(10) };
    let mut runtime = Incarnation::start(&launch, 1).await.unwrap();
    let live = Live { world, http: reqwest::Client::builder().no_proxy().build().unwrap(), _dir: dir };
    let api = runtime.api.clone();

    // One good operation first: what must not be lost.
    let (status, _) = post(&live, &api, submission("keep-me").to_string()).await;
    assert_eq!(status, 202);

    let cases: Vec<(&str, String, u16, &str)> = vec![
        (
            "empty id",
            with(submission("x"), "operation_id", json!("")),
            400,
            "expected operation_id to be 1 to 128 characters",
        ),
        ("id with a space", with(submission("x"), "operation_id", json!("a b")), 400, "found \"a b\""),
        ("id too long", with(submission("x"), "operation_id", json!("x".repeat(129))), 400, "1 to 128 characters"),
        (
            "unknown tool kind",
            with(submission("x"), "tool", json!({"name": "charge_card", "kind": "maybe"})),
            400,
            "maybe",
        ),
        ("empty tenant", with(submission("x"), "tenant", json!("")), 400, "expected tenant to be 1 to 128 characters"),
        ("destination twice", with(submission("x"), "destinations", json!(["a", "a"])), 400, "more than once"),
        ("not JSON", "{not json".to_owned(), 400, "expected an operation submission"),
        ("missing fields", "{}".to_owned(), 400, "expected an operation submission"),
        (
            "oversized",
            with(submission("x"), "arguments", json!({"blob": "x".repeat(70 * 1024)})),
            413,
            "at most 65536 bytes",
        ),
        (
            "same id, different body",
            with(submission("keep-me"), "destinations", json!(["elsewhere"])),
            409,
            "expected a resubmission of keep-me to repeat its first body exactly",
        ),
    ];
    for (what, body, expected_status, expected_message) in cases {
        let (status, answer) = post(&live, &api, body).await;
        let message = answer["error"].as_str().unwrap_or_default();
        assert_eq!(status, expected_status, "{what}: {answer}");
        assert!(message.contains(expected_message), "{what}: expected {expected_message:?} in {message:?}");
    }
    // The same body again is idempotent: 200, not a second operation.
    let (status, _) = post(&live, &api, submission("keep-me").to_string()).await;
    assert_eq!(status, 200);

    // Kill and restart: the accepted operation is still there and completes, with its first body.
    runtime.kill().await;
    let mut runtime = Incarnation::start(&launch, 2).await.unwrap();
    let client = Client::new(&runtime.api);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let report = loop {
        let report = client.read("keep-me").await.unwrap();
        if report.is_settled(&["ledger".to_owned()]) {
            break report;
        }
        assert!(tokio::time::Instant::now() < deadline, "keep-me did not settle: {}", report.summary());
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(report.execution, ExecutionState::Succeeded);
    assert_eq!(report.deliveries.len(), 1, "the 409'd body must not have changed the destinations");
    runtime.kill().await;
    live.world.shutdown().await;
}
