//! What the fake world's spoilt answers look like on the wire, read with a raw TCP socket so that
//! no HTTP client can tidy them up: a `cut` must deliver a complete head and a short body, a
//! `drop` no complete head at all, `garbage` a complete 200 that is not JSON; a `signal_then_answer`
//! nothing until the harness releases it.

use fake_tool::{Clock, FaultResponse, Injected, LookupFault, ProviderFault, World};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `request` raw and reads until the server closes the connection.
async fn exchange(world: &World, request: String) -> Vec<u8> {
    let addr = world.base_url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect to the fake world");
    stream.write_all(request.as_bytes()).await.expect("send the request");
    let mut answer = Vec::new();
    // A reset after a partial answer is part of what is being tested: keep what arrived.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the fake world closes the connection of a spoilt answer");
    answer
}

fn call(operation: &str) -> String {
    let body = format!(r#"{{"arguments":{{"_killpoint":{{"operation":"{operation}"}}}}}}"#);
    format!(
        "POST /provider/tools/charge_card HTTP/1.1\r\nHost: x\r\nIdempotency-Key: {operation}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

async fn world_with(operation: &str, response: FaultResponse) -> World {
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    world.arm_provider(ProviderFault {
        operation: operation.to_owned(),
        call: 1,
        effect: true,
        response,
        tag: 0,
        revocations: Vec::new(),
    });
    world
}

/// (head, body) of a raw answer, if its head is complete.
fn split(answer: &[u8]) -> Option<(String, Vec<u8>)> {
    let end = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((String::from_utf8_lossy(&answer[..end]).into_owned(), answer[end + 4..].to_vec()))
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
        .unwrap_or_else(|| panic!("no Content-Length in the head:\n{head}"))
}

#[tokio::test]
async fn cut_sends_a_complete_head_and_a_short_body() {
    let world = world_with("op-cut", FaultResponse::Cut).await;
    let answer = exchange(&world, call("op-cut")).await;
    let (head, body) = split(&answer).unwrap_or_else(|| panic!("no complete head: {answer:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let length = content_length(&head);
    assert!(!body.is_empty() && body.len() < length, "body of {} bytes, Content-Length {length}", body.len());
    world.shutdown().await;
}

#[tokio::test]
async fn drop_breaks_the_connection_before_a_complete_head() {
    let world = world_with("op-drop", FaultResponse::Drop).await;
    let answer = exchange(&world, call("op-drop")).await;
    assert!(split(&answer).is_none(), "a complete head arrived: {:?}", String::from_utf8_lossy(&answer));
    world.shutdown().await;
}

#[tokio::test]
async fn garbage_is_a_complete_200_that_is_not_json() {
    let world = world_with("op-garbage", FaultResponse::Garbage).await;
    let answer = exchange(&world, call("op-garbage")).await;
    let (head, body) = split(&answer).expect("a complete head");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert_eq!(body.len(), content_length(&head));
    assert!(serde_json::from_slice::<serde_json::Value>(&body).is_err(), "{}", String::from_utf8_lossy(&body));
    world.shutdown().await;
}

#[tokio::test]
async fn no_ref_is_complete_json_without_provider_ref() {
    let world = world_with("op-noref", FaultResponse::NoRef).await;
    let answer = exchange(&world, call("op-noref")).await;
    let (head, body) = split(&answer).expect("a complete head");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let json: serde_json::Value = serde_json::from_slice(&body).expect("a JSON body");
    assert!(json.get("provider_ref").is_none() && json.get("result").is_some(), "{json}");
    world.shutdown().await;
}

#[tokio::test]
async fn a_dropped_lookup_sends_no_head_then_lookups_answer_truthfully() {
    let world = world_with("op-look", FaultResponse::Status(503)).await;
    world.arm_lookup(LookupFault { operation: "op-look".into(), times: 1, response: Injected::Dropped });
    let _ = exchange(&world, call("op-look")).await;
    let lookup = "GET /provider/tools/charge_card/effects?idempotency_key=op-look HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let first = exchange(&world, lookup.to_owned()).await;
    assert!(split(&first).is_none(), "a complete head arrived: {:?}", String::from_utf8_lossy(&first));
    let second = exchange(&world, lookup.to_owned()).await;
    let (head, _) = split(&second).expect("a complete head");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    world.shutdown().await;
}

#[tokio::test]
async fn a_provider_fault_puts_its_revocations_in_force_once_when_it_receives_the_call() {
    use fake_tool::{Event, Revocation, Subject};
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    let revocation = Revocation { tenant: "acme".into(), actor: None, subject: Subject::Operation("op-revoke".into()) };
    world.arm_provider(ProviderFault {
        operation: "op-revoke".into(),
        call: 1,
        effect: false,
        response: FaultResponse::Status(503),
        tag: 0,
        revocations: vec![revocation],
    });
    let answer = exchange(&world, call("op-revoke")).await;
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 503"));
    let _ = exchange(&world, call("op-revoke")).await;
    let entries = world.entries();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| match &e.event {
            Event::ProviderCall { call, .. } if *call == 1 => "call 1",
            Event::ProviderCall { .. } => "call 2",
            Event::Revocation { .. } => "revocation",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["call 1", "revocation", "call 2"]);
    world.shutdown().await;
}

/// A request whose `Killpoint-Incarnation` is below the one the harness declared current is
/// answered `409 fenced` and applied nowhere; the current one and one without the header are
/// served, each ledger entry showing the incarnation it carried.
#[tokio::test]
async fn a_stale_incarnation_is_fenced_and_applies_nothing() {
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    world.fence(2);
    let with_incarnation = |operation: &str, incarnation: &str| {
        call(operation).replacen(
            "Idempotency-Key:",
            &format!("Killpoint-Incarnation: {incarnation}\r\nIdempotency-Key:"),
            1,
        )
    };
    let stale = exchange(&world, with_incarnation("op-stale", "1")).await;
    let stale = String::from_utf8_lossy(&stale);
    assert!(stale.starts_with("HTTP/1.1 409"), "{stale}");
    assert!(stale.ends_with(r#"{"error":"fenced"}"#), "{stale}");
    let current = exchange(&world, with_incarnation("op-current", "2")).await;
    assert!(String::from_utf8_lossy(&current).starts_with("HTTP/1.1 200"));
    let unfenced = exchange(&world, call("op-unfenced")).await;
    assert!(String::from_utf8_lossy(&unfenced).starts_with("HTTP/1.1 200"));

    let seen: Vec<(&str, Option<u32>)> = world
        .entries()
        .iter()
        .map(|e| match &e.event {
            fake_tool::Event::Fenced { current: 2, .. } => ("fenced", e.incarnation),
            fake_tool::Event::ProviderCall { .. } => ("call", e.incarnation),
            _ => ("other", e.incarnation),
        })
        .collect();
    assert_eq!(seen, [("fenced", Some(1)), ("call", Some(2)), ("call", None)]);
    world.shutdown().await;
}

/// `SignalThenAnswer`: the harness hears of the call, and the runtime reads nothing of the answer
/// until the harness releases the tag; then a complete 200.
#[tokio::test]
async fn signal_then_answer_holds_the_answer_until_released() {
    use std::time::Duration;
    let (world, mut points) = World::start(Clock::default()).await.expect("start the fake world");
    let fault = |tag| ProviderFault {
        operation: "op-held".to_owned(),
        call: 1,
        effect: true,
        response: FaultResponse::SignalThenAnswer,
        tag,
        revocations: Vec::new(),
    };
    world.arm_provider(fault(7));
    let world = std::sync::Arc::new(world);
    let caller = world.clone();
    let mut answer = tokio::spawn(async move { exchange(&caller, call("op-held")).await });
    let point = tokio::time::timeout(Duration::from_secs(5), points.recv())
        .await
        .expect("the provider signals the call within 5 s")
        .expect("the world's kill point channel is open");
    assert_eq!(point.tag, 7, "{point:?}");
    // Long past a loopback answer's time: an answer sent with the signal would be here.
    let early = tokio::time::timeout(Duration::from_millis(300), &mut answer).await;
    assert!(early.is_err(), "expected no answer before the release, found one");
    world.release(7);
    let answer = tokio::time::timeout(Duration::from_secs(5), answer)
        .await
        .expect("the answer comes within 5 s of the release")
        .expect("the caller task ends");
    let (head, _) = split(&answer).unwrap_or_else(|| panic!("no complete head: {answer:?}"));
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
}
