//! `arguments_unchanged`: every call the provider saw carries the arguments of the operation it
//! executes exactly as they were submitted, the harness's planted `_killpoint` identity included
//! (CONTRACT.md §3-1).
//!
//! The identity is what the provider counts effects by. A call that lost it still reached the
//! provider: it is attributed here by the rest of its arguments (the harness's `note` names the
//! operation), so that the per-operation invariants count it instead of reporting attempts that
//! "never reached the provider".

use super::ledger::evidence;
use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::client::Client;
use crate::run::driver::Run;
use crate::scenario::{Operation, Scenario};
use fake_tool::{Entry, Event};
use serde_json::Value;

/// The arguments the harness submitted for `op`.
fn submitted(op: &Operation) -> Value {
    Client::submission(op)["arguments"].clone()
}

/// `arguments` without the planted identity.
fn without_identity(arguments: &Value) -> Value {
    let mut rest = arguments.clone();
    if let Some(fields) = rest.as_object_mut() {
        fields.remove("_killpoint");
    }
    rest
}

/// The provider calls that name no operation but are `op`'s: to its tool, with its submitted
/// arguments once the identity is set aside (or the tool's only operation in the scenario).
/// A task's are matched against the model's answers for it instead (each has its own values).
pub(super) fn unnamed_calls_of<'a>(scenario: &Scenario, run: &'a Run, op: &Operation) -> Vec<&'a Entry> {
    let tool = op.tool.tool_name();
    let alone = scenario.operations.iter().filter(|o| o.tool == op.tool).count() == 1;
    let mine: Vec<Value> = if op.task {
        super::decisions::answers(run, &op.id).map(without_identity).collect()
    } else {
        vec![without_identity(&submitted(op))]
    };
    run.ledger
        .iter()
        .filter(|e| match &e.event {
            Event::ProviderCall { tool: t, operation: None, arguments, .. } if t == tool => {
                (alone && !op.task) || arguments.as_ref().is_some_and(|a| mine.contains(&without_identity(a)))
            }
            _ => false,
        })
        .collect()
}

/// Every provider call of `op`: those its planted identity names and those attributed to it, in
/// ledger order.
fn calls_of<'a>(scenario: &Scenario, run: &'a Run, op: &Operation) -> Vec<&'a Entry> {
    let mut calls: Vec<&Entry> = run
        .ledger
        .iter()
        .filter(|e| matches!(&e.event, Event::ProviderCall { operation: Some(o), .. } if *o == op.id))
        .collect();
    calls.extend(unnamed_calls_of(scenario, run, op));
    calls.sort_by_key(|e| e.seq);
    calls
}

/// Where two arguments differ: the path (`note`, `_killpoint.operation`) and the submitted and
/// received values there (`None`: absent).
type Difference<'a> = (String, Option<&'a Value>, Option<&'a Value>);

/// The first place where `found` differs from `expected`.
fn difference<'a>(expected: &'a Value, found: &'a Value, path: &str) -> Option<Difference<'a>> {
    match (expected, found) {
        (Value::Object(e), Value::Object(f)) => {
            let join = |key: &str| if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") };
            for (key, value) in e {
                match f.get(key) {
                    None => return Some((join(key), Some(value), None)),
                    Some(other) => {
                        if let Some(found) = difference(value, other, &join(key)) {
                            return Some(found);
                        }
                    }
                }
            }
            f.iter().find(|(key, _)| !e.contains_key(*key)).map(|(key, value)| (join(key), None, Some(value)))
        }
        _ if expected == found => None,
        _ => Some((
            if path.is_empty() { "(the whole value)".to_owned() } else { path.to_owned() },
            Some(expected),
            Some(found),
        )),
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "missing".to_owned(), Value::to_string)
}

/// The arguments a task operation's call must carry: those of the model's answer that its
/// `_killpoint.decision` names (CONTRACT.md §12-2), or why there are none.
fn decided(run: &Run, op: &Operation, call: &Value) -> Result<Value, String> {
    let Some(id) = call.pointer("/_killpoint/decision").and_then(Value::as_str) else {
        return Err(
            "carries no `_killpoint.decision`: its arguments are not a model's answer, passed on unchanged".to_owned()
        );
    };
    super::decisions::answer(run, &op.id, id)
        .map(|(_, arguments)| arguments.clone())
        .ok_or_else(|| format!("names the decision `{id}`, which the model never gave for `{}`", op.id))
}

/// Contract §3-1 and §12-2, for every operation of the scenario: its calls, named or attributed,
/// against the submission, or for a task against the model's answer each call acted on.
pub(super) fn arguments_unchanged(scenario: &Scenario, run: &Run, violations: &mut Vec<Violation>) {
    for op in &scenario.operations {
        if op.task {
            task_arguments(scenario, run, op, violations);
            continue;
        }
        let expected = submitted(op);
        let calls = calls_of(scenario, run, op);
        let differing: Vec<(&Entry, Difference)> = calls
            .iter()
            .filter_map(|e| match &e.event {
                Event::ProviderCall { arguments, .. } => {
                    let found = arguments.as_ref().unwrap_or(&Value::Null);
                    difference(&expected, found, "").map(|d| (*e, d))
                }
                _ => None,
            })
            .collect();
        let Some((first, (path, submitted, received))) = differing.first() else { continue };
        let tool = op.tool.tool_name();
        let identity = if path.starts_with("_killpoint") {
            " — the identity the harness planted so that the provider can count this operation's effects"
        } else {
            ""
        };
        violations.push(Violation::new(
            breach!(ArgumentsUnchanged, "§3-1"),
            Some(op.id.clone()),
            format!(
                "{} of {} call(s) to `{tool}` for `{}` reached the provider with arguments other than those submitted (the first at #{}): at `{path}` submitted {}, received {}{identity}; the arguments must reach the provider unchanged",
                differing.len(),
                calls.len(),
                op.id,
                first.seq,
                show(*submitted),
                show(*received),
            ),
            evidence(differing.iter().map(|(e, _)| *e).take(5)),
        ));
    }
}

/// §12-2: every call of a task operation carries the arguments of the model's answer it names.
fn task_arguments(scenario: &Scenario, run: &Run, op: &Operation, violations: &mut Vec<Violation>) {
    let calls = calls_of(scenario, run, op);
    let differing: Vec<(&Entry, String)> = calls
        .into_iter()
        .filter_map(|e| {
            let Event::ProviderCall { arguments, .. } = &e.event else { return None };
            let found = arguments.as_ref().unwrap_or(&Value::Null);
            let why = match decided(run, op, found) {
                Err(why) => why,
                Ok(expected) => {
                    let (path, answered, received) = difference(&expected, found, "")?;
                    format!(
                        "differs from the model's answer at `{path}`: answered {}, received {}",
                        show(answered),
                        show(received)
                    )
                }
            };
            Some((e, why))
        })
        .collect();
    let Some((first, why)) = differing.first() else { return };
    violations.push(Violation::new(
        breach!(ArgumentsUnchanged, "§12-2"),
        Some(op.id.clone()),
        format!(
            "{} call(s) to the provider for the task `{}` did not carry a model's answer unchanged; the first (#{}) {why}. A task's call must carry the arguments of the model's tool call it acts on, `_killpoint` included (CONTRACT.md §12-2)",
            differing.len(),
            op.id,
            first.seq,
        ),
        evidence(differing.iter().map(|(e, _)| *e).take(5)),
    ));
}

#[cfg(test)]
mod tests {
    use super::difference;
    use serde_json::json;

    #[test]
    fn the_first_difference_names_its_path_and_both_values() {
        let submitted = json!({ "note": "n", "_killpoint": { "operation": "op-1" } });
        assert_eq!(difference(&submitted, &submitted.clone(), ""), None);
        let stripped = json!({ "note": "n" });
        let (path, e, f) = difference(&submitted, &stripped, "").unwrap();
        assert_eq!((path.as_str(), e, f), ("_killpoint", Some(&json!({ "operation": "op-1" })), None));
        let renamed = json!({ "note": "n", "_killpoint": { "operation": "op-2" } });
        let (path, e, f) = difference(&submitted, &renamed, "").unwrap();
        assert_eq!((path.as_str(), e, f), ("_killpoint.operation", Some(&json!("op-1")), Some(&json!("op-2"))));
        let added = json!({ "note": "n", "_killpoint": { "operation": "op-1" }, "dry_run": false });
        let (path, e, f) = difference(&submitted, &added, "").unwrap();
        assert_eq!((path.as_str(), e, f), ("dry_run", None, Some(&json!(false))));
        // Re-serialised JSON is the same JSON: key order carries nothing.
        let reordered: serde_json::Value =
            serde_json::from_str(r#"{"_killpoint":{"operation":"op-1"},"note":"n"}"#).unwrap();
        assert_eq!(difference(&submitted, &reordered, ""), None);
    }
}
