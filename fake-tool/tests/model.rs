//! The fake model as a client meets it, over raw HTTP: a decision per question (another one each
//! time it is asked), a final text once a tool result is in the conversation, the same answers
//! streamed as server-sent events, its faults, and a world restored from a snapshot going on
//! from the same count. Also the keyed tool's refusal of a key reused with other arguments.

use fake_tool::{Clock, Event, Injected, ModelAnswer, ModelFault, ModelScript, World, task_marker};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// POSTs `body` to `path` and returns (status, head, body) once the server closes.
async fn post(world: &World, path: &str, headers: &str, body: &Value) -> (u16, String, String) {
    let addr = world.base_url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect to the fake world");
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send the request");
    let mut answer = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer))
        .await
        .expect("the fake world answers within 5 s")
        .expect("read the answer");
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer.split_once("\r\n\r\n").expect("a complete head");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    (status, head.to_owned(), body.to_owned())
}

fn question(op: &str, tool: &str, stream: bool, tool_result: bool) -> Value {
    let mut messages = vec![json!({ "role": "user", "content": format!("Charge the customer. {}", task_marker(op)) })];
    if tool_result {
        messages.push(json!({ "role": "assistant", "tool_calls": [{ "id": "call_x", "type": "function",
            "function": { "name": tool, "arguments": "{}" } }] }));
        messages.push(json!({ "role": "tool", "tool_call_id": "call_x", "content": "{\"receipt\":\"r\"}" }));
    }
    json!({ "model": "killpoint", "messages": messages, "stream": stream,
            "tools": [{ "type": "function", "function": { "name": tool, "parameters": { "type": "object" } } }] })
}

async fn armed_world(op: &str) -> World {
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    world.arm_model(ModelScript { operation: op.to_owned(), tool: "charge_card".to_owned(), seed: 7 });
    world
}

/// The tool call of a non-streamed answer: (id, name, arguments).
fn tool_call(body: &str) -> (String, String, Value) {
    let answer: Value = serde_json::from_str(body).expect("a JSON completion");
    let call = &answer["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls", "{answer}");
    let arguments = serde_json::from_str(call["function"]["arguments"].as_str().expect("arguments as a string"))
        .expect("the arguments string is JSON");
    (call["id"].as_str().unwrap().to_owned(), call["function"]["name"].as_str().unwrap().to_owned(), arguments)
}

fn model_calls(world: &World) -> Vec<(u32, String, ModelAnswer)> {
    world
        .entries()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ModelCall { ask, conversation, answer, .. } => Some((ask, conversation, answer)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_same_question_asked_twice_gets_two_decisions() {
    let world = armed_world("op-1").await;
    let path = "/model/v1/chat/completions";
    let (s1, _, b1) = post(&world, path, "", &question("op-1", "charge_card", false, false)).await;
    let (s2, _, b2) = post(&world, path, "", &question("op-1", "charge_card", false, false)).await;
    assert_eq!((s1, s2), (200, 200), "{b1}\n{b2}");
    let (id1, name1, args1) = tool_call(&b1);
    let (id2, _, args2) = tool_call(&b2);
    assert_eq!(name1, "charge_card");
    assert_ne!(id1, id2, "each answer is another decision");
    assert_ne!(args1["amount_cents"], args2["amount_cents"], "drawn anew: {args1} {args2}");
    assert_eq!(args1["_killpoint"], json!({ "operation": "op-1", "decision": id1 }));
    let calls = model_calls(&world);
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0, calls[1].0), (1, 2), "asks are numbered");
    assert_eq!(calls[0].1, calls[1].1, "the same conversation, the same fingerprint");
    assert!(matches!(&calls[1].2, ModelAnswer::ToolCall { id, arguments, .. } if *id == id2 && *arguments == args2));
}

#[tokio::test]
async fn a_conversation_with_the_tools_result_gets_a_final_text() {
    let world = armed_world("op-1").await;
    let (status, _, body) =
        post(&world, "/model/v1/chat/completions", "", &question("op-1", "charge_card", false, true)).await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert!(answer["choices"][0]["message"]["content"].as_str().unwrap().starts_with("Done"), "{answer}");
    assert!(matches!(model_calls(&world)[0].2, ModelAnswer::Text { .. }));
}

#[tokio::test]
async fn a_streamed_decision_reassembles_to_the_recorded_one() {
    let world = armed_world("op-s").await;
    let mut q = question("op-s", "charge_card", true, false);
    q["stream_options"] = json!({ "include_usage": true });
    let (status, head, body) = post(&world, "/model/v1/chat/completions", "", &q).await;
    assert_eq!(status, 200, "{body}");
    assert!(head.to_ascii_lowercase().contains("content-type: text/event-stream"), "{head}");
    let events: Vec<&str> = body.split("\n\n").filter_map(|e| e.strip_prefix("data: ")).collect();
    assert_eq!(events.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    let arguments: String = chunks
        .iter()
        .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0/function/arguments").and_then(Value::as_str))
        .collect();
    assert!(chunks.iter().filter(|c| c.pointer("/choices/0/delta/tool_calls").is_some()).count() >= 2, "in pieces");
    assert!(chunks.last().unwrap().get("usage").is_some(), "usage chunk when asked");
    let arguments: Value = serde_json::from_str(&arguments).expect("the pieces make JSON");
    match &model_calls(&world)[0].2 {
        ModelAnswer::ToolCall { arguments: recorded, .. } => assert_eq!(*recorded, arguments),
        other => panic!("expected a tool call, got {other:?}"),
    }
}

#[tokio::test]
async fn mistakes_are_refused_with_what_was_expected() {
    let world = armed_world("op-1").await;
    let path = "/model/v1/chat/completions";
    let (s, _, b) = post(&world, path, "", &json!({ "messages": [{ "role": "user", "content": "hi" }] })).await;
    assert_eq!(s, 400);
    assert!(b.contains("no task marker"), "{b}");
    let (s, _, b) = post(&world, path, "", &question("op-1", "send_sms", false, false)).await;
    assert_eq!(s, 400);
    assert!(b.contains("needs the tool `charge_card`"), "{b}");
    let (s, _, b) = post(&world, path, "", &question("op-9", "charge_card", false, false)).await;
    assert_eq!(s, 400);
    assert!(b.contains("no task is armed for operation `op-9`"), "{b}");
}

#[tokio::test]
async fn a_model_fault_spoils_the_first_questions_only() {
    let world = armed_world("op-1").await;
    world.arm_model_fault(ModelFault { operation: "op-1".into(), times: 1, response: Injected::Failed(503) });
    let path = "/model/v1/chat/completions";
    let (s1, _, _) = post(&world, path, "", &question("op-1", "charge_card", false, false)).await;
    let (s2, _, b2) = post(&world, path, "", &question("op-1", "charge_card", false, false)).await;
    assert_eq!((s1, s2), (503, 200));
    let (id, ..) = tool_call(&b2);
    assert_eq!(id, "call_op_1_1", "a spoilt answer is no decision: the first decision is still number 1");
}

#[tokio::test]
async fn a_world_from_a_snapshot_goes_on_counting_decisions() {
    let world = armed_world("op-1").await;
    let path = "/model/v1/chat/completions";
    post(&world, path, "", &question("op-1", "charge_card", false, false)).await;
    let snapshot = world.snapshot();
    let (restored, _points) = World::start_from(&snapshot, snapshot.clock()).await.expect("restore");
    let (_, _, body) = post(&restored, path, "", &question("op-1", "charge_card", false, false)).await;
    assert_eq!(tool_call(&body).0, "call_op_1_2");
}

#[tokio::test]
async fn a_keyed_tool_refuses_its_key_with_other_arguments() {
    let (world, _points) = World::start(Clock::default()).await.expect("start the fake world");
    let path = "/provider/tools/create_ticket";
    let first = json!({ "arguments": { "amount_cents": 1200, "_killpoint": { "operation": "t" } } });
    let other = json!({ "arguments": { "amount_cents": 3900, "_killpoint": { "operation": "t" } } });
    let (s1, _, b1) = post(&world, path, "Idempotency-Key: t\r\n", &first).await;
    let (s2, _, b2) = post(&world, path, "Idempotency-Key: t\r\n", &first).await;
    let (s3, _, b3) = post(&world, path, "Idempotency-Key: t\r\n", &other).await;
    assert_eq!((s1, s2, s3), (200, 200, 409), "{b1}\n{b2}\n{b3}");
    assert_eq!(b1, b2, "the same request replays the first answer");
    let refusal: Value = serde_json::from_str(&b3).unwrap();
    assert_eq!(refusal["code"], fake_tool::KEY_REUSED);
    let effects: Vec<fake_tool::Effect> = world
        .entries()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ProviderCall { effect, .. } => Some(effect),
            _ => None,
        })
        .collect();
    let first_ref = "create_ticket-000001".to_owned();
    assert_eq!(
        effects,
        vec![
            fake_tool::Effect::Applied(first_ref.clone()),
            fake_tool::Effect::Replayed(first_ref.clone()),
            fake_tool::Effect::KeyReused(first_ref)
        ]
    );
}

/// What OpenAI's clients read of an answer (tests/model_client.rs asks with the real Python one;
/// this holds the wire shape where python3 is missing): a completion's `object`, integer
/// `created` and `model`; a streamed answer's chunks one completion (one id, one `created`), the
/// first tool-call delta with its `index`, `id`, `type` and name, one finish, and the usage chunk
/// with no choices, as the client's accumulator expects.
#[tokio::test]
async fn answers_have_the_fields_openai_clients_read() {
    let world = armed_world("op-w").await;
    let path = "/model/v1/chat/completions";
    let (_, _, body) = post(&world, path, "", &question("op-w", "charge_card", false, false)).await;
    let plain: Value = serde_json::from_str(&body).expect("a JSON completion");
    assert_eq!((&plain["object"], &plain["model"]), (&json!("chat.completion"), &json!("killpoint")), "{plain}");
    assert!(plain["created"].is_u64(), "created is an integer: {plain}");
    assert_eq!(plain["choices"][0]["message"]["role"], "assistant", "{plain}");
    assert_eq!(plain["choices"][0]["message"]["tool_calls"][0]["type"], "function", "{plain}");

    let mut q = question("op-w", "charge_card", true, false);
    q["stream_options"] = json!({ "include_usage": true });
    let (_, _, body) = post(&world, path, "", &q).await;
    let chunks: Vec<Value> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).expect("each event's data is a JSON chunk"))
        .collect();
    let first = &chunks[0];
    assert_ne!(first["id"], plain["id"], "another answer, another completion id");
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk", "{chunk}");
        assert_eq!(
            (&chunk["id"], &chunk["created"], &chunk["model"]),
            (&first["id"], &first["created"], &first["model"])
        );
    }
    let call = &first["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(
        (&call["index"], &call["type"], &call["function"]["name"]),
        (&json!(0), &json!("function"), &json!("charge_card"))
    );
    assert!(call["id"].as_str().is_some_and(|id| id.starts_with("call_")), "{call}");
    let finishes: Vec<&Value> =
        chunks.iter().filter_map(|c| c.pointer("/choices/0/finish_reason")).filter(|f| !f.is_null()).collect();
    assert_eq!(finishes, [&json!("tool_calls")], "one finish");
    let usage = chunks.last().expect("chunks");
    assert_eq!(usage["choices"], json!([]), "the usage chunk has no choices: {usage}");
}
