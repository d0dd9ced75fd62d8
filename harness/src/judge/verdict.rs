//! What the checker hands back: the verdict of one run, its violations, how each fault was
//! exercised, and the one-word status that follows from them.

use super::rules::breach::Breach;
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::driver::Hit;
use fake_tool::ToolKind;
use serde::Serialize;
use std::collections::BTreeSet;

/// One broken promise, with its proof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Violation {
    pub invariant: Invariant,
    /// The rules of the contract this violation breaks (`§4-10`), named by the check that found
    /// it: not every rule its invariant checks. Private so that only a [`Breach`] sets them, and
    /// [`Violation::also_breaks`] adds a rule of the table's for its invariant.
    rules: Vec<&'static str>,
    pub operation: Option<String>,
    pub message: String,
    /// Ledger lines (`#seq text`) that show it.
    pub evidence: Vec<String>,
}

impl Violation {
    pub fn new(breach: Breach, operation: Option<String>, message: String, evidence: Vec<String>) -> Violation {
        Violation { invariant: breach.invariant(), rules: breach.rules().to_vec(), operation, message, evidence }
    }

    /// The rules of the contract it breaks, in the order its check named them.
    pub fn rules(&self) -> &[&'static str] {
        &self.rules
    }

    /// It breaks `rule` too, where the coverage table says its invariant checks that rule (a
    /// service rule, in a run that exercises it: `service_rules.rs`); elsewhere, nothing changes.
    pub(super) fn also_breaks(&mut self, rule: &'static str) {
        if super::rules::breach::checked_by(rule, self.invariant) && !self.rules.contains(&rule) {
            self.rules.push(rule);
        }
    }

    /// Whether it breaks rule `id` (`§4-10`).
    pub fn breaks(&self, id: &str) -> bool {
        self.rules.contains(&id)
    }
}

/// How one fault of the scenario was exercised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    pub boundary: Boundary,
    pub operation: String,
    pub tool_kind: ToolKind,
    pub hit: Hit,
    /// The violations (indices into the verdict's) this fault can have caused: its matrix cell
    /// and JUnit case fail on these only (`judge/attribution.rs`).
    pub violations: Vec<usize>,
}

/// The checker's judgement of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub scenario: String,
    /// Whether the runtime implemented the probe in this run.
    pub probe: bool,
    /// The crash model the verdict holds under: what each kill took down.
    pub crash: crate::model::crash::Crash,
    pub violations: Vec<Violation>,
    /// The rules of the contract a full pass of this scenario establishes, under this crash: those
    /// its `[[catches]]` are known to catch broken (`judge/rules/caught.rs`). Rules no variant
    /// breaks are established by any full pass, and are not listed.
    pub exercises: Vec<&'static str>,
    /// One entry per fault of the scenario, in file order.
    pub coverage: Vec<Coverage>,
    /// Why the run was not judged: the harness failed during it, or its scenario asked for a
    /// `[[syscall_fault]]` whose address this run could not have (`judge/address.rs`, said with
    /// where to count from).
    pub error: Option<String>,
    /// The indexes of those unreachable `[[syscall_fault]]`s: explore, whose re-run of a
    /// concurrent workload need not pass the point its record run did, counts such a case as not
    /// reached, not as failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreachable: Vec<usize>,
    /// Task operations whose model was asked for a decision more than once: a cost, reported,
    /// never a violation (CONTRACT.md section 12).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasked: Vec<Reasked>,
    /// The `[[service_fault]]`s (indices) at a boundary only the probe announces, in a run without
    /// it: never fired, and not the runtime's failure — the scenario passes only in part, as a
    /// worker's fault there does (`Hit::NeedsProbe`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_probe_services: Vec<usize>,
    /// Operations a restore forgot whose kind has no lookup: what no runtime can be owed, a risk
    /// of the tool kind, reported, never a violation (CONTRACT.md section 13, "What cannot be owed").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restore_risks: Vec<RestoreRisk>,
}

/// An operation a restore's backup forgot, of a kind without lookup, and the effects the provider
/// applied for it (more than one: the risk came true).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RestoreRisk {
    pub operation: String,
    pub tool: String,
    pub effects: usize,
}

/// A task operation whose model was asked for a decision `decisions` times (more than once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Reasked {
    pub operation: String,
    pub decisions: u32,
}

/// A scenario's outcome in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every invariant held and every fault was exercised.
    Pass,
    /// Every invariant held, but some faults need the probe this runtime lacks: those boundaries
    /// are not certified.
    Partial,
    Fail,
    /// The run could not be judged (the harness failed, or the scenario asked for a crash point
    /// the run could not have): the runtime neither passed nor failed.
    Error,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.error.is_none()
    }

    pub fn status(&self) -> Status {
        if self.error.is_some() {
            Status::Error
        } else if !self.violations.is_empty() {
            Status::Fail
        } else if self.coverage.iter().any(|c| c.hit == Hit::NeedsProbe) || !self.needs_probe_services.is_empty() {
            Status::Partial
        } else {
            Status::Pass
        }
    }

    pub fn failed_invariants(&self) -> BTreeSet<Invariant> {
        self.violations.iter().map(|v| v.invariant).collect()
    }
}
