//! Reports for people: the scenario table, the boundary × tool kind matrix, and the story of a
//! failure. (Machine-readable reports are in `certificate.rs`.)

use crate::judge::{Status, Verdict};
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::driver::{Hit, Run};
use crate::run::incarnation::tail_of_logs;
use crate::run::trace;
use crate::scenario::Scenario;
use fake_tool::ToolKind;
use serde::Serialize;
use std::fmt::Write as _;

/// One scenario × verdict × invariants table.
pub fn table(rows: &[(String, Result<Verdict, String>)]) -> String {
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(8).max(8);
    let mut out = format!("{:<width$}  {:<7}  invariants\n", "scenario", "verdict");
    for (name, verdict) in rows {
        let (word, detail) = match verdict {
            Ok(v) => match v.status() {
                Status::Pass => ("pass", format!("all {} hold", Invariant::ALL.len())),
                Status::Partial => {
                    let mut missing: Vec<String> = v
                        .coverage
                        .iter()
                        .filter(|c| c.hit == Hit::NeedsProbe)
                        .map(|c| format!("{} of {}", c.boundary, c.operation))
                        .collect();
                    missing.extend(v.needs_probe_services.iter().map(|i| format!("service fault {}", i + 1)));
                    ("partial", format!("all hold; not exercised without the probe: {}", missing.join(", ")))
                }
                Status::Error => (
                    "ERROR",
                    format!("not judged: {}", v.error.as_deref().and_then(|e| e.lines().next()).unwrap_or_default()),
                ),
                Status::Fail => (
                    "FAIL",
                    format!(
                        "violated: {}",
                        v.failed_invariants().iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                ),
            },
            Err(e) => ("ERROR", e.lines().next().unwrap_or_default().to_owned()),
        };
        let mut cost = match verdict.as_ref().map(|v| v.reasked.as_slice()) {
            Ok([]) | Err(_) => String::new(),
            Ok(reasked) => format!("; cost: {}", reasked_line(reasked)),
        };
        if let Ok(v) = verdict
            && !v.restore_risks.is_empty()
        {
            cost.push_str(&format!("; restore risk: {}", risks_line(&v.restore_risks)));
        }
        let _ = writeln!(out, "{name:<width$}  {word:<7}  {detail}{cost}");
    }
    let count = |s: Status| rows.iter().filter(|(_, v)| v.as_ref().is_ok_and(|v| v.status() == s)).count();
    let errors = rows.iter().filter(|(_, v)| v.is_err()).count() + count(Status::Error);
    let _ = writeln!(
        out,
        "\n{} passed, {} partial, {} failed{}",
        count(Status::Pass),
        count(Status::Partial),
        count(Status::Fail),
        match errors {
            0 => String::new(),
            n => format!(", {n} not judged (error)"),
        },
    );
    if count(Status::Partial) > 0 {
        let _ = writeln!(out, "(partial: every invariant held, but some boundaries need the probe this runtime lacks)");
    }
    out
}

/// One cell of the certification matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cell {
    /// No scenario kills at this boundary with this kind of tool.
    Untested,
    /// Only the probe reaches this boundary, and the runtime has none.
    NeedsProbe,
    /// Passed, with every kill here exact.
    Pass,
    /// Passed, with at least one kill only approximately here.
    Approximate,
    /// A scenario that kills here failed for an operation of this kind (or never got here).
    Fail,
}

impl Cell {
    fn word(self) -> &'static str {
        match self {
            Cell::Untested => "-",
            Cell::NeedsProbe => "n/a: probe",
            Cell::Pass => "pass",
            Cell::Approximate => "pass (~)",
            Cell::Fail => "FAIL",
        }
    }
}

/// The certification matrix: boundary × tool kind, folded over every scenario's faults.
pub fn matrix(verdicts: &[&Verdict]) -> Vec<(Boundary, ToolKind, Cell)> {
    let mut cells = Vec::new();
    for boundary in Boundary::ALL {
        for kind in ToolKind::ALL {
            let mut cell = Cell::Untested;
            for v in verdicts {
                for c in v.coverage.iter().filter(|c| c.boundary == boundary && c.tool_kind == kind) {
                    // The faults at this cell: what they can have caused, not their scenario's verdict.
                    let failed = !c.violations.is_empty();
                    // A fault a restore's renumbering left unreached, held against nothing
                    // (CONTRACT.md section 13): not exercised here, as if it were not there.
                    if c.hit == Hit::NotReached && !failed && v.crash == crate::model::crash::Crash::Restore {
                        continue;
                    }
                    let this = match c.hit {
                        Hit::NeedsProbe => Cell::NeedsProbe,
                        Hit::NotReached => Cell::Fail,
                        _ if failed => Cell::Fail,
                        Hit::Approximate => Cell::Approximate,
                        Hit::Exact | Hit::AtSyscall => Cell::Pass,
                    };
                    cell = cell.max(this);
                }
            }
            cells.push((boundary, kind, cell));
        }
    }
    cells
}

/// The boundaries some fault was killed at exactly at a system call (no probe, under
/// `killpoint-tracer`), for the line under the matrix that says how they were reached.
pub fn at_syscalls(verdicts: &[&Verdict]) -> Vec<Boundary> {
    Boundary::ALL
        .into_iter()
        .filter(|b| verdicts.iter().any(|v| v.coverage.iter().any(|c| c.boundary == *b && c.hit == Hit::AtSyscall)))
        .collect()
}

/// The matrix as a text table.
pub fn matrix_table(cells: &[(Boundary, ToolKind, Cell)]) -> String {
    let width = 11;
    let mut out = format!("{:<24}", "boundary \\ tool kind");
    for kind in ToolKind::ALL {
        let _ = write!(out, "  {:<width$}", short(kind));
    }
    out.push('\n');
    for boundary in Boundary::ALL {
        let _ = write!(out, "{:<24}", boundary.as_str());
        for kind in ToolKind::ALL {
            let cell = cells.iter().find(|(b, k, _)| *b == boundary && *k == kind).map_or(Cell::Untested, |c| c.2);
            let _ = write!(out, "  {:<width$}", cell.word());
        }
        out.push('\n');
    }
    out.push_str(
        "(~ = not exactly at the boundary: killed as soon as the fake world saw it, or at the sync taken for its commit; - = no scenario kills there)\n",
    );
    out
}

fn short(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::IdempotentByKey => "idempotent",
        ToolKind::NonIdempotentWithLookup => "lookup",
        ToolKind::NonIdempotentNoLookup => "no-lookup",
        ToolKind::SafelyRepeatable => "repeatable",
    }
}

/// How many of each incarnation's last decisions a story quotes (the certificate and the HTML
/// report hold them all).
const STORY_DECISIONS: usize = 12;

/// A failure told as a story: what was meant to happen, what broke, the proof, the whole trace,
/// and the runtime's last words. The caller says where the artifacts were kept.
/// "the model was asked for 2 decisions of `charge`, 3 of `sms`"
/// `sms (non_idempotent_no_lookup, 2 effects)`, for each operation a restore forgot whose kind has
/// no lookup (CONTRACT.md section 13, "What cannot be owed").
fn risks_line(risks: &[crate::judge::RestoreRisk]) -> String {
    let each: Vec<String> =
        risks.iter().map(|r| format!("`{}` ({}, {} effect(s))", r.operation, r.tool, r.effects)).collect();
    each.join(", ")
}

fn reasked_line(reasked: &[crate::judge::Reasked]) -> String {
    let each: Vec<String> = reasked.iter().map(|r| format!("{} decisions of `{}`", r.decisions, r.operation)).collect();
    format!("the model was asked for {}", each.join(", "))
}

pub fn story(scenario: &Scenario, verdict: &Verdict, run: &Run) -> String {
    let mut out = String::new();
    match &verdict.error {
        Some(error) => {
            let _ = writeln!(out, "scenario `{}` ({}) could not be judged:", scenario.name, scenario.path.display());
            let _ = writeln!(out, "  not judged, and not the runtime's doing: {error}");
        }
        // Told for a `[[catches]]` whose variant did nothing wrong here: no ✗ line follows.
        None if verdict.violations.is_empty() => {
            let _ = writeln!(
                out,
                "scenario `{}` ({}) passed: no invariant was violated",
                scenario.name,
                scenario.path.display()
            );
        }
        None => {
            let _ = writeln!(out, "scenario `{}` ({}) failed:", scenario.name, scenario.path.display());
        }
    }
    for line in scenario.description.lines() {
        let _ = writeln!(out, "  | {line}");
    }
    let _ = writeln!(out);
    for v in &verdict.violations {
        let _ = writeln!(out, "  ✗ {}: {}", v.invariant, v.message);
        for e in &v.evidence {
            let _ = writeln!(out, "      {e}");
        }
    }
    if !verdict.reasked.is_empty() {
        let _ = writeln!(
            out,
            "  cost (not a violation): {}; each answer is another decision, of which only one may be acted on (CONTRACT.md §12-3)",
            reasked_line(&verdict.reasked)
        );
    }
    let _ = writeln!(out, "\n  trace (harness, runtime, provider, consumers, policy on one clock):");
    for line in trace::lines(run) {
        let _ = writeln!(out, "    #{:<4} {}", line.seq, line.text);
    }
    if let Some(schedule) = crate::report::schedule::ScheduleView::of(run) {
        let _ = write!(out, "\n{}", schedule.story(STORY_DECISIONS));
    }
    // A run that stopped early already quoted the runtime's last output in its reason (above):
    // once is enough.
    let quoted = run.aborted.as_deref().is_some_and(|reason| reason.contains("last lines of the runtime's"));
    if !quoted {
        let logs = run.artifacts_path().join("logs");
        let _ = writeln!(out, "\n{}", tail_of_logs(&logs, 20));
    }
    out
}
