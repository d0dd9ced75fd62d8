//! A certification's timelines as OpenTelemetry traces in OTLP/JSON (`--otlp FILE`), for Jaeger or
//! any OTLP viewer: one trace per scenario, its root span the scenario (an error when it failed),
//! a span per incarnation of the runtime (from its start to its kill, or the end) with every event
//! of the timeline in it as a span event (kills, restarts, boundaries, ledger lines, retry lines),
//! and a span per operation (from its submission to the last event naming it).
//!
//! Built with the OpenTelemetry protobuf types (`opentelemetry-proto`), whose serde encoding is
//! OTLP/JSON's (hex ids, nanoseconds as strings): what is written parses back into them.

use super::outcome::ScenarioOutcome;
use super::timeline::{Kind, Timeline, TimelineEvent};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span, status};
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime};

/// Every scenario that ran as a trace; `ended` is when the certification ended (each scenario's
/// clock is placed so that it ended then: the timelines keep time since their own start only).
pub fn render(outcomes: &[ScenarioOutcome], runtime: &str, ended: SystemTime) -> String {
    let spans = outcomes.iter().filter_map(|o| Some(scenario_spans(o, o.timeline.as_ref()?, ended))).flatten();
    let request = ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "killpoint"), text("killpoint.runtime", runtime)],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "killpoint".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans: spans.collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    };
    serde_json::to_string_pretty(&request).expect("OTLP types serialise")
}

/// One scenario's spans: the root, its incarnations, its operations.
fn scenario_spans(outcome: &ScenarioOutcome, timeline: &Timeline, ended: SystemTime) -> Vec<Span> {
    let last = timeline.events.iter().map(|e| e.at_micros).max().unwrap_or(0);
    let zero = ended.checked_sub(Duration::from_micros(last)).unwrap_or(SystemTime::UNIX_EPOCH);
    let nanos = |micros: u64| unix_nanos(zero) + micros * 1000;
    let trace_id = digest(&["trace", &outcome.name, &unix_nanos(ended).to_string()])[..16].to_vec();
    let root_id = span_id(&trace_id, "scenario", 0);
    let failed = match &outcome.verdict {
        Ok(v) if v.passed() => None,
        Ok(v) => Some(format!(
            "violated {}",
            v.failed_invariants().iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
        )),
        Err(why) => Some(why.clone()),
    };
    let span = |name: String, id: Vec<u8>, (from, to): (u64, u64)| Span {
        trace_id: trace_id.clone(),
        span_id: id,
        parent_span_id: root_id.clone(),
        name,
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: nanos(from),
        end_time_unix_nano: nanos(to),
        ..Span::default()
    };
    let mut root = span(format!("scenario {}", outcome.name), root_id.clone(), (0, last));
    root.parent_span_id = Vec::new();
    root.status = Some(match failed {
        None => Status { code: status::StatusCode::Ok as i32, message: String::new() },
        Some(message) => Status { code: status::StatusCode::Error as i32, message },
    });
    let mut spans = vec![root];
    for (n, (from, to), events) in incarnations(timeline, last) {
        let mut life = span(format!("incarnation {n}"), span_id(&trace_id, "incarnation", n), (from, to));
        life.events = events.into_iter().map(|e| event(e, nanos(e.at_micros))).collect();
        spans.push(life);
    }
    for (i, (operation, (from, to))) in operations(timeline).into_iter().enumerate() {
        let mut op = span(format!("operation {operation}"), span_id(&trace_id, "operation", i as u64), (from, to));
        op.attributes = vec![text("killpoint.operation", &operation)];
        spans.push(op);
    }
    spans
}

/// Each incarnation's number, its lifetime (its start to the next kill or start, or the end) and
/// the events in it. Events before the first start belong to the first.
fn incarnations(timeline: &Timeline, last: u64) -> Vec<(u64, (u64, u64), Vec<&TimelineEvent>)> {
    let mut lives: Vec<(u64, (u64, u64), Vec<&TimelineEvent>)> = Vec::new();
    for e in &timeline.events {
        if let Some(n) = started(e) {
            if let Some(previous) = lives.last_mut().filter(|l| l.1.1 == u64::MAX) {
                previous.1.1 = e.at_micros;
            }
            lives.push((n, (e.at_micros, u64::MAX), Vec::new()));
        }
        if lives.is_empty() {
            lives.push((1, (e.at_micros, u64::MAX), Vec::new()));
        }
        let current = lives.last_mut().expect("one incarnation at least");
        current.2.push(e);
        if e.kind == Kind::Kill && current.1.1 == u64::MAX && e.text.contains("incarnation") {
            current.1.1 = e.at_micros;
        }
    }
    for life in &mut lives {
        life.1.1 = life.1.1.min(last);
    }
    lives
}

/// `harness   start incarnation N`: N.
fn started(e: &TimelineEvent) -> Option<u64> {
    let words: Vec<&str> = e.text.split_whitespace().collect();
    match words[..] {
        ["harness", "start", "incarnation", n] => n.parse().ok(),
        _ => None,
    }
}

/// Each operation submitted (`harness   submit OP`), from its first submission to the last event
/// that names it as a word.
fn operations(timeline: &Timeline) -> Vec<(String, (u64, u64))> {
    let mut ops: Vec<(String, (u64, u64))> = Vec::new();
    for e in &timeline.events {
        let words: Vec<&str> = e.text.split_whitespace().collect();
        if let ["harness", "submit", op] = words[..]
            && !ops.iter().any(|(o, _)| o == op)
        {
            ops.push((op.to_owned(), (e.at_micros, e.at_micros)));
        }
    }
    for e in &timeline.events {
        let named = |op: &str| e.text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')).any(|w| w == op);
        for (op, (_, to)) in ops.iter_mut() {
            if named(op) {
                *to = (*to).max(e.at_micros);
            }
        }
    }
    ops
}

fn event(e: &TimelineEvent, at: u64) -> span::Event {
    let kind = match e.kind {
        Kind::Plain => "event",
        Kind::Kill => "kill",
        Kind::Restart => "restart",
        Kind::Retry => "retry",
    };
    span::Event {
        time_unix_nano: at,
        name: e.text.clone(),
        attributes: vec![
            text("killpoint.lane", &e.lane.label()),
            text("killpoint.kind", kind),
            value("killpoint.seq", any_value::Value::IntValue(i64::try_from(e.seq).unwrap_or(i64::MAX))),
        ],
        dropped_attributes_count: 0,
    }
}

fn text(key: &str, text: &str) -> KeyValue {
    value(key, any_value::Value::StringValue(text.into()))
}

fn value(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(value) }), ..KeyValue::default() }
}

fn span_id(trace_id: &[u8], what: &str, n: u64) -> Vec<u8> {
    digest(&[&hex(trace_id), what, &n.to_string()])[..8].to_vec()
}

fn digest(parts: &[&str]) -> Vec<u8> {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unix_nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}
