//! `cargo test --test model_client`: the fake model (fake-tool/src/model.rs) asked by the real
//! OpenAI client, the `openai` Python package pinned in examples/frameworks/requirements.txt — the
//! client an agent framework's model layer is built on (pydantic-ai's `openai` extra) — in both
//! modes, with tool calls (issue 30).
//!
//! `model_client::openai_python` starts the world in this process, arms the model for one
//! operation and runs tests/frameworks/model_client.py with the frameworks' virtualenv
//! (`target/frameworks-venv`, made once by tests/frameworks/venv.rs; `KILLPOINT_FRAMEWORKS_PYTHON`
//! names another interpreter). The script asks the same question four ways (not streamed,
//! streamed and put together from the chunks, through the client's stream helper, streamed by
//! the async client), sends the streamed call's result back twice (not streamed, through the
//! helper), and asks about an operation the model was not armed for. The trial holds what the
//! client made of each answer, and of the refusal, against what the world's ledger says the model
//! answered.
//!
//! Where python3 is missing the trial is ignored, with the reason on stderr (as the frameworks::
//! trials are); a virtualenv that could not be made fails it.

#[path = "frameworks/installed.rs"]
#[allow(dead_code)] // `installed_kit` is tests/frameworks.rs's; this test runs children with `within`.
mod installed;
#[path = "frameworks/venv.rs"]
#[allow(dead_code)] // its lock's own trial is tests/frameworks.rs's; this test makes the virtualenv.
mod venv;

use fake_tool::{Clock, Event, ModelAnswer, ModelScript, World};
use killpoint::trials::arguments::TestArguments;
use libtest_mimic::{Failed, Trial};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

const OPERATION: &str = "model-client-1";
/// An operation the model is not armed for: it refuses, and the client raises its error.
const UNARMED: &str = "model-client-unarmed";
const TOOL: &str = "charge_card";

/// How long the script may take: an interpreter importing the client and seven questions to a
/// server on loopback take a few seconds; this is a hang bound for a loaded 2-core machine.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(90);

/// What the script asks, in its order (tests/frameworks/model_client.py): the report's key, and
/// whether the question was streamed.
const ASKED: [(&str, bool); 6] = [
    ("plain", false),
    ("streamed", true),
    ("helper", true),
    ("async_streamed", true),
    ("final", false),
    ("final_streamed", true),
];

/// The questions of `ASKED` that ask for a decision (the rest carry the tool's result).
const DECISIONS: usize = 4;

fn main() -> ExitCode {
    killpoint::trials::interpreter::python3_first_on_path();
    let args = TestArguments::from_args();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python_present = killpoint::trials::needs::python3_runs();
    if !python_present {
        eprintln!("python3 not found: model_client::openai_python (the real OpenAI client) is ignored, not passed");
    }
    let trial =
        Trial::test("model_client::openai_python", move || openai_python(&root)).with_ignored_flag(!python_present);
    args.run(vec![trial]).exit_code()
}

/// The interpreter with the pinned client: `KILLPOINT_FRAMEWORKS_PYTHON`, or the frameworks'
/// virtualenv, made here if it is not made yet.
fn python(root: &Path) -> Result<PathBuf, Failed> {
    if let Some(python) = std::env::var_os("KILLPOINT_FRAMEWORKS_PYTHON") {
        return Ok(PathBuf::from(python));
    }
    let venv = root.join("target/frameworks-venv");
    venv::make_venv(root, &venv).map_err(|why| format!("the frameworks' virtualenv could not be made: {why}"))?;
    Ok(venv.join("bin/python"))
}

fn openai_python(root: &Path) -> Result<(), Failed> {
    let python = python(root)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("a tokio runtime for the world: {e}"))?;
    let (world, _points) =
        runtime.block_on(World::start(Clock::default())).map_err(|e| format!("starting the fake world: {e}"))?;
    world.arm_model(ModelScript { operation: OPERATION.to_owned(), tool: TOOL.to_owned(), seed: 30 });
    // The world serves on the runtime's threads while this one waits for the script.
    let script = root.join("tests/frameworks/model_client.py");
    let asked = installed::within(
        SCRIPT_DEADLINE,
        Command::new(&python)
            .arg(&script)
            .arg(world.model_url())
            .args([OPERATION, UNARMED])
            .env("PYTHONDONTWRITEBYTECODE", "1"),
        &format!("{} {} {} {OPERATION} {UNARMED}", python.display(), script.display(), world.model_url()),
    );
    let answers = model_answers(&world, OPERATION);
    let refusals = model_answers(&world, UNARMED);
    runtime.block_on(world.shutdown());
    let report = report_of(&asked?)?;
    eprintln!("openai {} against the fake model", report["openai"]);
    judge(&report, &answers)
        .and_then(|()| refusal_understood(&report["refused"], &refusals))
        .map_err(|why| format!("{why}\nthe script's report: {report:#}").into())
}

/// The script's report: the JSON line it prints last.
fn report_of(output: &std::process::Output) -> Result<Value, String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .ok_or_else(|| format!("expected the script to print one JSON line last, found:\n{stdout}"))
}

/// What the ledger says the model was asked about `wanted`: (ask, streamed, conversation, answer).
fn model_answers(world: &World, wanted: &str) -> Vec<(u32, bool, String, ModelAnswer)> {
    world
        .entries()
        .into_iter()
        .filter_map(|entry| match entry.event {
            Event::ModelCall { operation, ask, conversation, stream, answer, .. }
                if operation.as_deref() == Some(wanted) =>
            {
                Some((ask, stream, conversation, answer))
            }
            _ => None,
        })
        .collect()
}

/// The script's report held against the ledger's answers, question by question.
fn judge(report: &Value, answers: &[(u32, bool, String, ModelAnswer)]) -> Result<(), String> {
    if answers.len() != ASKED.len() {
        return Err(format!("expected {} questions on the ledger, found {}: {answers:#?}", ASKED.len(), answers.len()));
    }
    let mut decisions = Vec::new();
    for (n, ((key, streamed), (ask, stream, _, answer))) in ASKED.iter().zip(answers).enumerate() {
        let got = &report[*key];
        let at = format!("question {} (`{key}`)", n + 1);
        expect(*ask == n as u32 + 1, &at, "the ledger's ask number", n + 1, ask)?;
        expect(stream == streamed, &at, "`stream` on the ledger", streamed, stream)?;
        match answer {
            ModelAnswer::ToolCall { id, tool, arguments } => {
                tool_call_understood(got, &at, id, tool, arguments)?;
                decisions.push((id.clone(), arguments.clone()));
            }
            ModelAnswer::Text { text } => text_understood(got, &at, text)?,
            other => return Err(format!("{at}: expected an answer on the ledger, found {other:?}")),
        }
    }
    if decisions.len() != DECISIONS {
        return Err(format!(
            "expected the first {DECISIONS} questions answered with tool calls, found {} of them: {decisions:?}",
            decisions.len()
        ));
    }
    decisions_differ(&decisions)?;
    same_question(answers)?;
    streamed_usage(report)?;
    completion_ids(report)?;
    helper_parsed(&report["helper"], &decisions[2].1)
}

/// The model's refusal reached the client as OpenAI's errors do: a `BadRequestError` whose body
/// has the ledger's message and type `invalid_request_error`.
fn refusal_understood(got: &Value, refusals: &[(u32, bool, String, ModelAnswer)]) -> Result<(), String> {
    let [(_, _, _, ModelAnswer::Refused { error })] = refusals else {
        return Err(format!("expected one refused question about `{UNARMED}` on the ledger, found {refusals:?}"));
    };
    let at = "`refused`";
    expect(got["status"] == 400, at, "the error's status", 400, &got["status"])?;
    expect(got["type"] == "invalid_request_error", at, "the error's type", "invalid_request_error", &got["type"])?;
    expect(got["message"] == error.as_str(), at, "the error's message", error, &got["message"])
}

/// The client read the ledger's tool call: one call, its id, name and arguments, finish `tool_calls`.
fn tool_call_understood(got: &Value, at: &str, id: &str, tool: &str, arguments: &Value) -> Result<(), String> {
    let calls = got["calls"].as_array().map_or(&[][..], Vec::as_slice);
    let [call] = calls else {
        return Err(format!("{at}: expected the client to see one tool call, found {}", got["calls"]));
    };
    expect(call["id"] == id, at, "the tool call's id", id, &call["id"])?;
    expect(call["type"] == "function", at, "the tool call's type", "function", &call["type"])?;
    expect(call["name"] == tool, at, "the tool call's name", tool, &call["name"])?;
    expect(call["arguments"] == *arguments, at, "the arguments (parsed)", arguments, &call["arguments"])?;
    expect(got["finish_reason"] == "tool_calls", at, "finish_reason", "tool_calls", &got["finish_reason"])
}

/// The client read the ledger's final text, finish `stop`, and no tool call.
fn text_understood(got: &Value, at: &str, text: &str) -> Result<(), String> {
    expect(got["content"] == text, at, "the final text", text, &got["content"])?;
    expect(got["finish_reason"] == "stop", at, "finish_reason", "stop", &got["finish_reason"])?;
    let calls = got["calls"].as_array().map_or(0, Vec::len);
    expect(calls == 0, at, "no tool call with the final text", 0, calls)
}

/// Each time asked, another decision: other ids, other amounts.
fn decisions_differ(decisions: &[(String, Value)]) -> Result<(), String> {
    for (i, (id, arguments)) in decisions.iter().enumerate() {
        for (other_id, other) in &decisions[i + 1..] {
            if id == other_id || arguments["amount_cents"] == other["amount_cents"] {
                return Err(format!(
                    "expected every decision to differ in id and amount_cents, found {id} {arguments} and {other_id} {other}"
                ));
            }
        }
    }
    Ok(())
}

/// The ways of asking for a decision sent the same conversation (the same fingerprint on the
/// ledger), and the conversations with the tool's result another one.
fn same_question(answers: &[(u32, bool, String, ModelAnswer)]) -> Result<(), String> {
    let fingerprints: Vec<&str> = answers.iter().map(|(_, _, conversation, _)| conversation.as_str()).collect();
    let asked_alike = fingerprints[1..DECISIONS].iter().all(|f| *f == fingerprints[0]);
    let answered_apart = fingerprints[DECISIONS..].iter().all(|f| *f != fingerprints[0]);
    if asked_alike && answered_apart {
        return Ok(());
    }
    Err(format!(
        "expected the first {DECISIONS} questions to be one conversation and the others another, found fingerprints {fingerprints:?}"
    ))
}

/// `stream_options.include_usage` was set: the usage chunk reached both clients, after the
/// answer's chunks.
fn streamed_usage(report: &Value) -> Result<(), String> {
    for key in ["streamed", "async_streamed"] {
        let at = format!("`{key}`");
        let usage = &report[key]["usage"]["total_tokens"];
        expect(usage.as_u64().is_some_and(|t| t > 0), &at, "the usage chunk's total_tokens", "> 0", usage)?;
        let chunks = report[key]["chunks"].as_u64().unwrap_or(0);
        expect(chunks >= 4, &at, "chunks (role and first piece, second piece, finish, usage)", ">= 4", chunks)?;
    }
    Ok(())
}

/// Each answer is one completion with an id of its own, as OpenAI's are (a framework keeps it as
/// the response's id): a streamed answer's chunks all carry it, and no two answers share one.
fn completion_ids(report: &Value) -> Result<(), String> {
    let mut ids = Vec::new();
    for (key, _) in ASKED {
        let id = completion_id(&report[key]).map_err(|found| format!("`{key}`: expected {found}"))?;
        if ids.contains(&id) {
            return Err(format!("`{key}`: expected a completion id of its own, found {id} again (all: {ids:?})"));
        }
        ids.push(id);
    }
    Ok(())
}

/// The id of one answer: the completion's, or the one every chunk carried when the script put the
/// chunks together itself (`completions`).
fn completion_id(got: &Value) -> Result<&str, String> {
    let id = match got.get("completions") {
        Some(Value::Array(ids)) if ids.len() == 1 => &ids[0],
        Some(ids) => return Err(format!("every chunk to carry one completion id, found {ids}")),
        None => &got["completion"],
    };
    id.as_str().ok_or_else(|| format!("a completion id, found {id}"))
}

/// The stream helper parsed the strict tool's arguments, in its event and in its final completion.
fn helper_parsed(helper: &Value, arguments: &Value) -> Result<(), String> {
    let parsed = &helper["parsed_arguments"];
    expect(*parsed == Value::Array(vec![arguments.clone()]), "`helper`", "parsed_arguments", arguments, parsed)?;
    let in_events = &helper["parsed_in_events"];
    expect(
        *in_events == Value::Array(vec![arguments.clone()]),
        "`helper`",
        "tool_calls.function.arguments.done's parsed_arguments",
        arguments,
        in_events,
    )
}

fn expect(
    holds: bool,
    at: &str,
    what: &str,
    expected: impl std::fmt::Display + std::fmt::Debug,
    found: impl std::fmt::Display + std::fmt::Debug,
) -> Result<(), String> {
    if holds { Ok(()) } else { Err(format!("{at}: expected {what} {expected}, found {found}")) }
}
