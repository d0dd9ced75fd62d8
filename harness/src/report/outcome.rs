//! What became of one scenario in a certification: the outcome as the harness holds it (with its
//! timeline) and the entry the certificate prints, and one cell of the boundary × tool-kind matrix.

use crate::judge::{Coverage, Verdict, Violation};
use crate::model::boundary::Boundary;
use crate::report::story::Cell;
use crate::report::timeline::Timeline;
use fake_tool::ToolKind;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// What became of one scenario in a certification run.
#[derive(Debug)]
pub struct ScenarioOutcome {
    pub name: String,
    pub file: PathBuf,
    /// The verdict, or why the scenario could not run at all.
    pub verdict: Result<Verdict, String>,
    pub duration: Duration,
    /// The failure story, for failed scenarios.
    pub story: Option<String>,
    /// Where the data dir and logs were kept, if they were.
    pub artifacts: Option<PathBuf>,
    /// The run's events on the shared clock, for the HTML report (absent if it could not run).
    pub timeline: Option<Timeline>,
    /// For kept artifacts: the `rerun.sh` in them that reruns exactly this case.
    pub rerun: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
pub struct ScenarioEntry {
    pub name: String,
    pub file: String,
    pub sha256: Option<String>,
    pub status: ScenarioStatus,
    /// The crash model its verdict holds under (`null`: it did not run).
    pub crash: Option<crate::model::crash::Crash>,
    pub error: Option<String>,
    pub duration_ms: u64,
    pub violations: Vec<Violation>,
    /// Tasks whose model was asked for more than one decision: a cost, not a violation
    /// (CONTRACT.md section 12). Absent when none was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reasked: Vec<crate::judge::Reasked>,
    /// Under `--crash restore`: operations of a kind without lookup that a backup forgot and a
    /// client resent, with the effects the provider applied for each (CONTRACT.md section 13,
    /// "What cannot be owed"): a risk, not a violation. Absent when none was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub restore_risks: Vec<crate::judge::RestoreRisk>,
    pub faults: Vec<Coverage>,
    pub artifacts: Option<String>,
    /// For a failure: the story (violations, evidence, trace, the runtime's last output).
    pub story: Option<String>,
    /// For a failure under a controlled schedule: which thread's call went at each decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::report::schedule::ScheduleView>,
}

/// A scenario's line in the certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioStatus {
    Pass,
    /// Passed, but some faults need the probe the runtime lacks.
    Partial,
    Fail,
    /// The scenario could not run at all, or the harness failed during it: not judged.
    Error,
}

#[derive(Debug, Serialize)]
pub struct MatrixCell {
    pub boundary: Boundary,
    pub tool_kind: ToolKind,
    pub cell: Cell,
}
