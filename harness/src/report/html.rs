//! The HTML report: one self-contained file (no network, no script) with the certification matrix
//! at the top and, per scenario, its timeline as inline SVG on the shared clock — one lane for the
//! runtime (incarnations, boundary announcements, kills and restarts), one for the provider, one
//! per consumer, one for the policy service — with each violation marked where its proof is and
//! explained beside the timeline with the ledger lines that prove it.
//!
//! [`render`] is a pure function of the certificate and the scenarios' timelines; the CLI writes
//! it with `--html PATH`, and every failing run's artifacts hold one.

use crate::model::boundary::Boundary;
use crate::report::certificate::Certificate;
use crate::report::markup::{anchor, esc};
use crate::report::outcome::{ScenarioEntry, ScenarioOutcome, ScenarioStatus};
use crate::report::story::Cell;
use crate::report::svg::svg;
use crate::report::timeline::{Kind, Timeline, evidence_seqs};
use fake_tool::ToolKind;
use std::fmt::Write as _;

const STYLE: &str = "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em;border-top:1px solid #ccc;padding-top:1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left;vertical-align:top}
.pass{background:#dfd}.approximate{background:#efd}.fail{background:#fcc}.needs_probe{background:#eee}.untested{color:#999}
.partial{background:#eee}.error{background:#fdb}
.status{font-weight:bold;text-transform:uppercase}
.scroll{overflow-x:auto;border:1px solid #ddd;margin:.5em 0}
.violations li{margin-bottom:.6em}.evidence{font:12px monospace;white-space:pre-wrap;color:#600}
.events td{font:12px monospace;white-space:pre}tr.retry td{color:#a60}tr.violated td{background:#fcc}tr.kill td{color:#b00}tr.restart td{color:#070}
details{margin:.5em 0}code{font-size:12px}section.scenario{background:none}";

/// The whole report. `outcomes` are the certificate's scenarios, in the same order; those with a
/// timeline get one drawn.
pub fn render(certificate: &Certificate, outcomes: &[ScenarioOutcome]) -> String {
    let mut out = String::new();
    let s = &certificate.summary;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>killpoint certificate: {}</title>\n<style>{STYLE}</style></head><body>\n",
        esc(&crate::report::certificate::runtime_name(&certificate.runtime))
    );
    let _ = writeln!(out, "<h1>killpoint certificate</h1>");
    let _ = writeln!(
        out,
        "<p>runtime <code>{}</code>{} · contract {} · killpoint {} · crashes: {} · <b>{} passed, {} partial, {} failed, {} not judged</b></p>",
        esc(&certificate.runtime.path),
        certificate.runtime.args.iter().map(|a| format!(" <code>{}</code>", esc(a))).collect::<String>(),
        esc(certificate.contract),
        esc(certificate.killpoint_version),
        esc(&certificate.crash_models()),
        s.passed,
        s.partial,
        s.failed,
        s.errors
    );
    matrix(&mut out, certificate);
    checklist(&mut out, &certificate.checklist);
    scenario_list(&mut out, &certificate.scenarios);
    for (i, entry) in certificate.scenarios.iter().enumerate() {
        let timeline = outcomes.get(i).and_then(|o| o.timeline.as_ref());
        scenario(&mut out, entry, timeline);
    }
    out.push_str("</body></html>\n");
    out
}

fn checklist(out: &mut String, items: &[crate::report::checklist::Item]) {
    out.push_str("<h2 id=\"checklist\">the seed's acceptance checklist</h2>\n<table class=\"checklist\"><tr><th>question</th><th>answer</th><th>evidence</th></tr>\n");
    for item in items {
        let class = match item.answer {
            crate::report::checklist::Answer::Yes => "pass",
            crate::report::checklist::Answer::No => "fail",
            crate::report::checklist::Answer::NotShown => "untested",
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"{class}\">{}</td><td>{}</td></tr>",
            esc(item.question),
            item.answer.as_str(),
            item.evidence.iter().map(|e| esc(e)).collect::<Vec<_>>().join("<br>")
        );
    }
    out.push_str("</table>\n");
}

fn status_class(status: ScenarioStatus) -> &'static str {
    match status {
        ScenarioStatus::Pass => "pass",
        ScenarioStatus::Partial => "partial",
        ScenarioStatus::Fail => "fail",
        ScenarioStatus::Error => "error",
    }
}

fn cell_class(cell: Cell) -> &'static str {
    match cell {
        Cell::Untested => "untested",
        Cell::NeedsProbe => "needs_probe",
        Cell::Pass => "pass",
        Cell::Approximate => "approximate",
        Cell::Fail => "fail",
    }
}

fn matrix(out: &mut String, certificate: &Certificate) {
    out.push_str("<h2 id=\"matrix\">boundary × tool kind</h2>\n<table class=\"matrix\"><tr><th>boundary</th>");
    for kind in ToolKind::ALL {
        let _ = write!(out, "<th>{}</th>", kind.as_str());
    }
    out.push_str("</tr>\n");
    for boundary in Boundary::ALL {
        let _ = write!(out, "<tr><th>{}</th>", boundary.as_str());
        for kind in ToolKind::ALL {
            let cell = certificate
                .matrix
                .iter()
                .find(|c| c.boundary == boundary && c.tool_kind == kind)
                .map_or(Cell::Untested, |c| c.cell);
            // Each scenario with a fault in this cell, linked.
            let mut links: Vec<String> = certificate
                .scenarios
                .iter()
                .filter(|s| s.faults.iter().any(|f| f.boundary == boundary && f.tool_kind == kind))
                .map(|s| format!("<a href=\"#s-{}\">{}</a>", anchor(&s.name), esc(&s.name)))
                .collect();
            links.dedup();
            let _ = write!(
                out,
                "<td class=\"{}\">{}{}</td>",
                cell_class(cell),
                cell_word(cell),
                if links.is_empty() { String::new() } else { format!("<br>{}", links.join("<br>")) }
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n<p>(~ = not exactly at the boundary: killed as soon as the fake world saw it, or at the sync taken for its commit; - = no scenario kills there)</p>\n");
}

fn cell_word(cell: Cell) -> &'static str {
    match cell {
        Cell::Untested => "-",
        Cell::NeedsProbe => "n/a: probe",
        Cell::Pass => "pass",
        Cell::Approximate => "pass (~)",
        Cell::Fail => "FAIL",
    }
}

fn scenario_list(out: &mut String, scenarios: &[ScenarioEntry]) {
    out.push_str(
        "<h2 id=\"scenarios\">scenarios</h2>\n<table><tr><th>scenario</th><th>verdict</th><th>violated</th></tr>\n",
    );
    for s in scenarios {
        let mut violated: Vec<&str> = s.violations.iter().map(|v| v.invariant.as_str()).collect();
        violated.sort();
        violated.dedup();
        let _ = writeln!(
            out,
            "<tr class=\"{}\"><td><a href=\"#s-{}\">{}</a></td><td class=\"status\">{}</td><td>{}</td></tr>",
            status_class(s.status),
            anchor(&s.name),
            esc(&s.name),
            status_class(s.status),
            esc(&violated.join(", "))
        );
    }
    out.push_str("</table>\n");
}

fn scenario(out: &mut String, entry: &ScenarioEntry, timeline: Option<&Timeline>) {
    let id = anchor(&entry.name);
    let _ = writeln!(
        out,
        "<section id=\"s-{id}\" class=\"scenario {}\"><h2>{} <span class=\"status\">{}</span></h2>",
        status_class(entry.status),
        esc(&entry.name),
        status_class(entry.status)
    );
    if let Some(error) = &entry.error {
        let _ = writeln!(out, "<p class=\"error\">not judged: {}</p>", esc(error));
    }
    if let Some(path) = &entry.artifacts {
        let _ = writeln!(out, "<p>artifacts: <code>{}</code></p>", esc(path));
    }
    // Which events prove which violation: those are marked on the timeline.
    let mut proven: Vec<(u64, usize)> = Vec::new();
    for (n, v) in entry.violations.iter().enumerate() {
        proven.extend(evidence_seqs(&v.evidence).into_iter().map(|seq| (seq, n)));
    }
    if let Some(timeline) = timeline {
        svg(out, &id, entry, timeline, &proven);
        let keys: Vec<String> = timeline.duplicate_keys.iter().map(|(who, n)| format!("{} {n}", esc(who))).collect();
        let _ =
            writeln!(out, "<p class=\"duplicates\">duplicate keys seen (the world's signal): {}</p>", keys.join(" · "));
    }
    if !entry.violations.is_empty() {
        out.push_str("<ol class=\"violations\">\n");
        for (n, v) in entry.violations.iter().enumerate() {
            let _ = write!(
                out,
                "<li id=\"v-{id}-{n}\" class=\"violation\" data-invariant=\"{}\"><b>{}</b>{}: {}",
                v.invariant.as_str(),
                v.invariant.as_str(),
                v.operation.as_deref().map(|o| format!(" ({})", esc(o))).unwrap_or_default(),
                esc(&v.message)
            );
            if !v.evidence.is_empty() {
                let _ = write!(out, "<div class=\"evidence\">{}</div>", esc(&v.evidence.join("\n")));
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n");
    }
    if let Some(schedule) = timeline.and_then(|t| t.schedule.as_ref()) {
        schedule.html(out);
    }
    if let Some(timeline) = timeline {
        let _ = writeln!(
            out,
            "<details{}><summary>every event ({})</summary><table class=\"events\"><tr><th>#</th><th>ms</th><th>lane</th><th>event</th></tr>",
            if entry.violations.is_empty() { "" } else { " open" },
            timeline.events.len()
        );
        for e in &timeline.events {
            let class = if proven.iter().any(|(s, _)| *s == e.seq) {
                "violated"
            } else {
                match e.kind {
                    Kind::Kill => "kill",
                    Kind::Restart => "restart",
                    Kind::Retry => "retry",
                    Kind::Plain => "plain",
                }
            };
            let _ = writeln!(
                out,
                "<tr class=\"{class}\"><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
                e.seq,
                e.at_micros as f64 / 1000.0,
                esc(&e.lane.label()),
                esc(&e.text)
            );
        }
        out.push_str("</table></details>\n");
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::{Coverage, Verdict, Violation};
    use crate::report::outcome::ScenarioOutcome;
    use crate::report::timeline::{Lane, TimelineEvent};
    use crate::run::driver::Hit;
    use std::path::PathBuf;
    use std::time::Duration;

    fn event(seq: u64, lane: Lane, kind: Kind, text: &str) -> TimelineEvent {
        // Times are fixed (a millisecond per tick): the snapshot holds none of a real run's.
        TimelineEvent { seq, led_to: None, at_micros: seq * 1000, lane, kind, text: text.to_owned() }
    }

    /// A small failing certification, made by hand: one kill, one restart, a duplicate effect.
    fn small() -> (Certificate, Vec<ScenarioOutcome>) {
        let timeline = Timeline {
            events: vec![
                event(1, Lane::Harness, Kind::Plain, "harness   start incarnation 1"),
                event(2, Lane::Policy, Kind::Plain, "policy    acme/alice tool charge_card (charge): allowed"),
                event(
                    3,
                    Lane::Provider,
                    Kind::Plain,
                    "provider  call charge_card for charge (call 1, key charge): applied charge_card-000001, answer held",
                ),
                event(4, Lane::Harness, Kind::Kill, "harness   SIGKILL incarnation 1"),
                event(5, Lane::Harness, Kind::Restart, "harness   start incarnation 2"),
                event(
                    6,
                    Lane::Provider,
                    Kind::Plain,
                    "provider  call charge_card for charge (call 2, key charge#2): applied charge_card-000002, answered 200",
                ),
                event(
                    7,
                    Lane::Consumer("ledger".into()),
                    Kind::Plain,
                    "consumer  ledger received charge (key charge): applied, answered 202",
                ),
            ],
            duplicate_keys: vec![("provider".into(), 0), ("consumer ledger".into(), 0)],
            retried: vec![6],
            retried_after_restore: Vec::new(),
            schedule: None,
        };
        let violation = Violation::new(
            crate::judge::rules::breach::breach!(AtMostOnce, "§5-1"),
            Some("charge".into()),
            "`charge` had 2 effects at the provider; at most one is allowed".into(),
            vec![
                "#3 provider  call charge_card for charge (call 1, key charge): applied charge_card-000001, answer held".into(),
                "#6 provider  call charge_card for charge (call 2, key charge#2): applied charge_card-000002, answered 200".into(),
            ],
        );
        let verdict = Verdict {
            scenario: "after_dispatch".into(),
            probe: true,
            crash: crate::model::crash::Crash::Process,
            violations: vec![violation],
            exercises: Vec::new(),
            coverage: vec![Coverage {
                boundary: Boundary::AfterDispatch,
                operation: "charge".into(),
                tool_kind: ToolKind::NonIdempotentWithLookup,
                hit: Hit::Exact,
                violations: vec![0],
            }],
            error: None,
            unreachable: Vec::new(),
            reasked: Vec::new(),
            restore_risks: Vec::new(),
            needs_probe_services: Vec::new(),
        };
        let outcome = ScenarioOutcome {
            name: "after_dispatch".into(),
            file: PathBuf::from("/nonexistent/after_dispatch.toml"),
            verdict: Ok(verdict),
            duration: Duration::from_millis(7),
            story: None,
            artifacts: None,
            timeline: Some(timeline),
            rerun: None,
        };
        let target = crate::run::incarnation::Target {
            program: PathBuf::from("/nonexistent/runtime"),
            args: vec!["--broken".into(), "blind-retry".into()],
        };
        let outcomes = vec![outcome];
        (Certificate::new(&target, &outcomes), outcomes)
    }

    #[test]
    fn a_failure_is_marked_on_its_timeline_and_explained_beside_it() {
        let (certificate, outcomes) = small();
        let html = render(&certificate, &outcomes);
        // Both proving provider calls are marked, each linking to the explanation.
        assert_eq!(html.matches("class=\"violation-marker\" data-invariant=\"at_most_once\"").count(), 2);
        assert_eq!(html.matches("href=\"#v-after_dispatch-0\"").count(), 2);
        assert!(html.contains("<li id=\"v-after_dispatch-0\" class=\"violation\" data-invariant=\"at_most_once\">"));
        assert!(html.contains("<g class=\"kill\">") && html.contains("<g class=\"restart\">"));
        assert!(html.contains("consumer ledger"), "one lane per consumer");
        // Issue 32 item 8: what the harness did is on its own lane, not the runtime's.
        assert!(html.contains("<td>harness</td><td>harness   SIGKILL incarnation 1</td>"), "{html}");
        assert!(html.contains("<a href=\"#s-after_dispatch\">after_dispatch</a>"), "the matrix links the scenario");
        assert!(!html.contains("<script"));
        insta::assert_snapshot!(html);
    }

    #[test]
    fn evidence_lines_name_their_sequence_numbers() {
        let lines = vec!["#12 provider  call charge_card".to_owned(), "no number".to_owned(), "#3".to_owned()];
        assert_eq!(evidence_seqs(&lines), vec![12, 3]);
    }
}
