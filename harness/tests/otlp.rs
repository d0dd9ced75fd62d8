//! Issue 35: `certify --otlp FILE` writes each scenario's timeline as an OpenTelemetry trace, and
//! the file parses back into the OpenTelemetry protobuf types (`opentelemetry-proto`, whose serde
//! encoding is OTLP/JSON's): a trace per scenario, a span per incarnation and per operation under
//! the scenario's, the kills and restarts as events, the verdict as the root's status.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::{Span, status::StatusCode};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::child;
use child::{output_within, text};

/// `certify --filter after_dispatch --otlp` of the reference runtime (`-- ARGS`), read back.
fn traced(dir: &Path, name: &str, args: &[&str]) -> (Option<i32>, Vec<Span>) {
    let file = dir.join(format!("{name}.otlp.json"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_killpoint"));
    command.current_dir(dir).env("TMPDIR", dir).stdout(Stdio::piped()).stderr(Stdio::piped());
    command.args(["certify", "--filter", "after_dispatch", "--jobs", "1", "--otlp"]).arg(&file).args(args);
    let output = output_within(command, Duration::from_secs(300), "certify --otlp");
    let written =
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}\n{:?}", file.display(), text(&output)));
    let request: ExportTraceServiceRequest = serde_json::from_str(&written).expect("OTLP/JSON of the proto types");
    let spans = request.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect();
    (output.status.code(), spans)
}

/// The shape every trace has, whatever the verdict: one trace, one root, the rest under it.
fn root_of(spans: &[Span]) -> &Span {
    let roots: Vec<&Span> = spans.iter().filter(|s| s.parent_span_id.is_empty()).collect();
    assert_eq!(roots.len(), 1, "one root span: {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    let root = roots[0];
    assert_eq!(root.name, "scenario after_dispatch");
    for span in spans {
        assert_eq!((span.trace_id.len(), span.span_id.len()), (16, 8), "{}", span.name);
        assert_eq!(span.trace_id, root.trace_id, "one trace per scenario: {}", span.name);
        assert!(span.start_time_unix_nano <= span.end_time_unix_nano, "{}", span.name);
        if span.span_id != root.span_id {
            assert_eq!(span.parent_span_id, root.span_id, "{} under the scenario", span.name);
        }
        for event in &span.events {
            let inside = span.start_time_unix_nano..=span.end_time_unix_nano;
            assert!(inside.contains(&event.time_unix_nano), "{} in {}", event.name, span.name);
        }
    }
    root
}

#[test]
fn certify_otlp_writes_a_trace_per_scenario_that_parses_as_opentelemetry() {
    let dir = tempfile::tempdir().unwrap();
    let (code, spans) = traced(dir.path(), "passing", &[]);
    assert_eq!(code, Some(0));
    let root = root_of(&spans);
    assert_eq!(root.status.as_ref().map(|s| s.code), Some(StatusCode::Ok as i32));
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for span in ["incarnation 1", "incarnation 2", "operation charge", "operation sms", "operation charge-not-applied"]
    {
        assert!(names.contains(&span), "expected the span `{span}`, found {names:?}");
    }
    let kinds = |kind: &str| {
        let of = |e: &&opentelemetry_proto::tonic::trace::v1::span::Event| {
            e.attributes.iter().any(|a| a.key == "killpoint.kind" && format!("{:?}", a.value).contains(kind))
        };
        spans.iter().flat_map(|s| &s.events).filter(of).count()
    };
    assert!(kinds("\"kill\"") >= 5 && kinds("\"restart\"") >= 5, "a kill and a restart per fault");

    let (code, spans) = traced(dir.path(), "failing", &["--", "--broken", "blind-retry"]);
    assert_eq!(code, Some(1));
    let status = root_of(&spans).status.clone().expect("a status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(status.message.contains("no_blind_retry"), "{}", status.message);
}
