//! Reports: the certification table, and the story of a failure.

use crate::checker::Verdict;
use crate::driver::Run;
use crate::incarnation::tail_of_logs;
use crate::invariant::Invariant;
use crate::scenario::Scenario;
use crate::trace;
use std::fmt::Write as _;

/// One scenario × verdict × invariants table.
pub fn table(rows: &[(String, Result<Verdict, String>)]) -> String {
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(8).max(8);
    let mut out = format!("{:<width$}  {:<7}  invariants\n", "scenario", "verdict");
    for (name, verdict) in rows {
        let (word, detail) = match verdict {
            Ok(v) if v.passed() => ("pass", format!("all {} hold", Invariant::ALL.len())),
            Ok(v) => (
                "FAIL",
                format!(
                    "violated: {}",
                    v.failed_invariants().iter().map(|i| i.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ),
            Err(e) => ("ERROR", e.lines().next().unwrap_or_default().to_owned()),
        };
        let _ = writeln!(out, "{name:<width$}  {word:<7}  {detail}");
    }
    let passed = rows.iter().filter(|(_, v)| v.as_ref().is_ok_and(Verdict::passed)).count();
    let _ = writeln!(out, "\n{passed} passed, {} failed", rows.len() - passed);
    out
}

/// A failure told as a story: what was meant to happen, what broke, the proof, the whole trace,
/// and the runtime's last words. The caller says where the artifacts were kept.
pub fn story(scenario: &Scenario, verdict: &Verdict, run: &Run) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "scenario `{}` ({}) failed:", scenario.name, scenario.path.display());
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
    let _ = writeln!(out, "\n  trace (harness, runtime, provider, consumers, policy on one clock):");
    for line in trace::lines(run) {
        let _ = writeln!(out, "    #{:<4} {}", line.seq, line.text);
    }
    let logs = run.artifacts_path().join("logs");
    let _ = writeln!(out, "\n{}", tail_of_logs(&logs, 20));
    out
}
