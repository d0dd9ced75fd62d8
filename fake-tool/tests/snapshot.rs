//! A world started from a snapshot answers as the world it was taken from would have: the same
//! replays, deduplications, revocations, remaining faults and fence, its ledger and clock going on
//! from the snapshot's.

use fake_tool::{
    Clock, ConsumerFault, Effect, Event, FaultResponse, PolicyAnswer, ProviderFault, Revocation, Subject, World,
    WorldSnapshot,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One request, raw (`Connection: close`); returns the status and the JSON body.
async fn post(world: &World, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, serde_json::Value) {
    let addr = world.base_url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect to the fake world");
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send the request");
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the fake world answers within 5 s")
        .expect("read the answer");
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no complete head: {text}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {head}"));
    (status, serde_json::from_str(body).unwrap_or(serde_json::Value::Null))
}

async fn call(world: &World, tool: &str, op: &str, key: &str, incarnation: &str) -> (u16, serde_json::Value) {
    let body = format!(r#"{{"arguments":{{"_killpoint":{{"operation":"{op}"}}}}}}"#);
    let headers = [("Idempotency-Key", key), ("Killpoint-Incarnation", incarnation)];
    post(world, &format!("/provider/tools/{tool}"), &headers, &body).await
}

async fn deliver(world: &World, destination: &str, op: &str, key: &str) -> u16 {
    let body = format!(r#"{{"operation_id":"{op}"}}"#);
    let headers = [("Idempotency-Key", key), ("Killpoint-Incarnation", "2")];
    post(world, &format!("/consumers/{destination}/events"), &headers, &body).await.0
}

/// The world before the snapshot: an effect, an applied delivery, a revocation, a consumer fault
/// half used up, a provider fault not reached yet, incarnation 2 declared current.
async fn lived_in() -> World {
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    world.arm_provider(ProviderFault {
        operation: "later".into(),
        call: 1,
        effect: false,
        response: FaultResponse::Status(503),
        tag: 0,
        revocations: Vec::new(),
    });
    world.arm_consumer(ConsumerFault {
        destination: "mailer".into(),
        operations: None,
        times: Some(2),
        apply: false,
        status: 503,
    });
    world.revoke(Revocation { tenant: "t".into(), actor: None, subject: Subject::Tool("send_sms".into()) });
    world.fence(2);
    assert_eq!(call(&world, "create_ticket", "ticket", "k-1", "2").await.0, 200);
    assert_eq!(deliver(&world, "ledger", "ticket", "d-1").await, 202);
    assert_eq!(deliver(&world, "mailer", "ticket", "m-1").await, 503, "the consumer fault's first receipt");
    world
}

#[tokio::test]
async fn a_world_started_from_a_snapshot_goes_on_where_it_was() {
    goes_on_where_it_was(|snapshot| snapshot).await;
}

/// A snapshot kept on disk beside a written case is JSON: read back, it starts the same world.
#[tokio::test]
async fn a_world_started_from_a_snapshot_written_as_json_goes_on_where_it_was() {
    goes_on_where_it_was(|snapshot| {
        let json = serde_json::to_string(&snapshot).expect("a snapshot writes as JSON");
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("a snapshot reads back from its JSON: {e}\n{json}"))
    })
    .await;
}

/// `kept` is what the snapshot goes through before the new world starts from it.
async fn goes_on_where_it_was(kept: impl FnOnce(WorldSnapshot) -> WorldSnapshot) {
    let original = lived_in().await;
    let snapshot = kept(original.snapshot());
    let before = snapshot.entries().to_vec();
    assert_eq!(snapshot.requests_recorded(), 3, "three requests, one revocation: {before:#?}");
    let clock = snapshot.clock();
    let (world, _points) = World::start_from(&snapshot, clock.clone()).await.expect("start from the snapshot");
    original.shutdown().await;

    // The provider's effects: a repeated key replays the first answer; call numbers go on.
    let (status, body) = call(&world, "create_ticket", "ticket", "k-1", "2").await;
    assert_eq!((status, body["provider_ref"].as_str()), (200, Some("create_ticket-000001")), "{body}");
    // The consumers' applied keys, and the consumer fault's one receipt left.
    assert_eq!(deliver(&world, "ledger", "ticket", "d-1").await, 202);
    assert_eq!(deliver(&world, "mailer", "ticket", "m-1").await, 503, "the consumer fault's second receipt");
    assert_eq!(deliver(&world, "mailer", "ticket", "m-1").await, 202, "the consumer fault is used up");
    // The provider fault not reached yet is still armed.
    assert_eq!(call(&world, "charge_card", "later", "k-2", "2").await.0, 503);
    // The revocation in force, and the fence.
    let check = r#"{"tenant":"t","actor":"a","operation_id":"sms","tool":"send_sms"}"#;
    let (status, body) = post(&world, "/policy/check", &[("Killpoint-Incarnation", "2")], check).await;
    assert_eq!((status, body["allowed"].as_bool()), (200, Some(false)), "{body}");
    assert_eq!(call(&world, "charge_card", "zombie", "k-3", "1").await.0, 409, "incarnation 1 is fenced");

    let entries = world.entries();
    assert_eq!(entries[..before.len()], before[..], "the ledger goes on from the snapshot's");
    let after = &entries[before.len()..];
    assert!(after.iter().all(|e| e.seq > snapshot.ticks()), "new entries number after the snapshot's: {after:#?}");
    assert!(after.windows(2).all(|w| w[0].seq < w[1].seq && w[0].at_micros <= w[1].at_micros));
    match &after[0].event {
        Event::ProviderCall { call, effect: Effect::Replayed(r), .. } => {
            assert_eq!((*call, r.as_str()), (2, "create_ticket-000001"))
        }
        other => panic!("expected the replayed second call, found {other:?}"),
    }
    assert!(matches!(&after[1].event, Event::ConsumerReceipt { applied: false, .. }), "{:?}", after[1]);
    assert!(after.iter().any(|e| matches!(e.event, Event::PolicyCheck { answer: PolicyAnswer::Refused, .. })));
    assert!(after.iter().any(|e| matches!(e.event, Event::Fenced { current: 2, .. })));
    world.shutdown().await;
}
