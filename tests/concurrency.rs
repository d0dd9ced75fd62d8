//! The reference runtime works on operations side by side: an operation whose provider never
//! answers does not hold up another one. A runtime that did one thing at a time would wait on the
//! held answer for ever, and the second operation would never settle.
//!
//! Event based, no timing: the provider holds the first charge's answer (and says so), and only
//! then is the second charge submitted; it must settle while the first is still held.

use fake_tool::{Clock, FaultResponse, ProviderFault, World};
use killpoint::run::client::{Client, ExecutionState};
use killpoint::run::incarnation::{Incarnation, Launch, Target};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// How long the second charge has to settle; a bound on a hang, not a wait.
const SETTLE: Duration = Duration::from_secs(10);

fn charge(id: &str) -> String {
    json!({
        "operation_id": id,
        "tenant": "acme",
        "actor": "agent-7",
        "tool": { "name": "charge_card", "kind": "non_idempotent_with_lookup" },
        "arguments": { "amount_cents": 1200, "_killpoint": { "operation": id } },
        "destinations": ["ledger"],
    })
    .to_string()
}

async fn submit(http: &reqwest::Client, api: &str, id: &str) {
    let response = http
        .post(format!("{api}/operations"))
        .header("content-type", "application/json")
        .body(charge(id))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 202, "submitting {id}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_operation_held_at_the_provider_does_not_hold_up_another() {
    let dir = tempfile::tempdir().unwrap();
    let (data, logs) = (dir.path().join("data"), dir.path().join("logs"));
    std::fs::create_dir(&data).unwrap();
    std::fs::create_dir(&logs).unwrap();
    let (world, mut points) = World::start(Clock::default()).await.unwrap();
    world.arm_provider(ProviderFault {
        operation: "held".into(),
        call: 1,
        effect: true,
        response: FaultResponse::Hold,
        tag: 0,
        revocations: Vec::new(),
    });
    let env = killpoint::run::driver::environment(&world, &data, &Default::default());
    let target = Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() };
    let launch = Launch { target: &target, env, logs: &logs, probe: None, ready_timeout: Duration::from_secs(10) };
    let mut runtime = Incarnation::start(&launch, 1).await.unwrap();
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let client = Client::new(&runtime.api);

    submit(&http, &runtime.api, "held").await;
    let point = tokio::time::timeout(SETTLE, points.recv())
        .await
        .expect("waited for the provider to hold the answer to `held`: it never received the call")
        .expect("the fake world is running");
    assert!(point.what.contains("call 1 of held"), "{}", point.what);

    submit(&http, &runtime.api, "free").await;
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        // The contract offers no event for "settled": reading the state is the one poll.
        let report = client.read("free").await.unwrap();
        if report.is_settled(&["ledger".to_owned()]) {
            assert_eq!(report.execution, ExecutionState::Succeeded, "{}", report.summary());
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "`free` did not settle within {SETTLE:?} while the provider held `held`'s answer (last seen: {}): the runtime works on one operation at a time",
            report.summary()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let held = client.read("held").await.unwrap();
    assert_eq!(held.execution, ExecutionState::Dispatched, "`held` is still waiting: {}", held.summary());

    runtime.kill().await;
    world.shutdown().await;
}
