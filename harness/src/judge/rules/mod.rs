//! The coverage table: every numbered rule of the contract (`[§4-3]` in `CONTRACT.md`) and what
//! checks it. This is the one place that says which rules killpoint verifies and which it does not.
//!
//! The rule texts come from `CONTRACT.md` itself (compiled in); the checks and their proofs (broken
//! variant → scenario) from [`RULES`]. `docs/coverage.md` is generated from the two, and tests fail
//! when the contract gains a rule without a row here, a row names a rule the contract lost, a
//! proof is not backed by that scenario's `[[catches]]`, or the document is stale.
//!
//! The table is `table.rs`, the contract parser `contract.rs`; this file generates the document
//! and judges the rules for a certificate. Like the rest of the judge layer, it imports nothing
//! from report, search or cli.

pub mod breach;
pub mod caught;
mod contract;
mod table;

pub use contract::{CONTRACT_TEXT, ContractRule, contract_rules};
pub use table::{
    Check, MACHINE_CRASH_RULES, PROVEN_ELSEWHERE, RESTORE_RULES, RULES, Rule, SERVICE_PROOFS, SERVICE_RULES,
    ServiceRun, TRACED_RULES,
};

use crate::model::crash::Crash;
use crate::model::invariant::Invariant;
use serde::Serialize;

/// `docs/coverage.md`, generated.
pub fn document() -> Result<String, Vec<String>> {
    let stated = contract_rules(CONTRACT_TEXT)?;
    let mut out = String::new();
    out.push_str(
        "# Coverage: every rule of the contract, and what checks it\n\n\
         Generated from `CONTRACT.md`, `harness/src/judge/rules/table.rs` and `harness/src/judge/rules/caught.rs` \
         by `cargo test` (`coverage_document_is_current`); do not edit by hand — run\n\
         `KILLPOINT_UPDATE_COVERAGE=1 cargo test -p killpoint --lib coverage` to rewrite it.\n\n\
         *Checked by* names the invariants (`harness/src/model/invariant.rs`) whose checks, failing, name \
         the rule (a violation names the rules it breaks, not every rule of its invariant). *Proven by* \
         names the broken variants of the reference runtime (`killpoint-runtime --broken …`) whose \
         violations in a scenario that `[[catches]]` them name the rule (`tests/broken_rules.rs` runs \
         each) — the proof that the check can fail for it — or, for an invariant no runtime bug is needed \
         to break, the test that proves it.\n\n",
    );
    let (mut checked, mut enforced, mut open) = (0, 0, 0);
    for rule in RULES {
        match rule.check {
            Check::Invariants(_) => checked += 1,
            Check::Harness(_) => enforced += 1,
            Check::NotChecked(_) => open += 1,
        }
    }
    out.push_str(&format!(
        "{} rules: {checked} checked by invariants, {enforced} enforced by the harness, {open} not checked.\n\n",
        RULES.len()
    ));
    out.push_str(
        "| rule | the contract says | checked by | proven by (broken variant → scenario) |\n|---|---|---|---|\n",
    );
    for rule in RULES {
        let text = stated.iter().find(|s| s.id == rule.id).map(|s| s.text.as_str()).unwrap_or("(missing)");
        let text = text.replace('|', "\\|");
        let (check, proof) = match rule.check {
            Check::Invariants(invariants) => {
                let names: Vec<String> = invariants.iter().map(|i| format!("`{i}`")).collect();
                let proofs: Vec<String> = caught::proofs(rule.id)
                    .iter()
                    .map(|(broken, scenario)| format!("`{broken}` → `{scenario}`"))
                    .collect();
                // No broken variant: a test of its own may prove that every invariant can fail.
                let elsewhere: Vec<&str> = invariants
                    .iter()
                    .map(|i| PROVEN_ELSEWHERE.iter().find(|(e, _)| e == i).map(|(_, test)| *test))
                    .collect::<Option<_>>()
                    .unwrap_or_default();
                let service = SERVICE_PROOFS.iter().find(|(id, _)| *id == rule.id).map(|(_, test)| *test);
                let proof = match (proofs.is_empty(), service, elsewhere.is_empty()) {
                    (false, _, _) => proofs.join(", "),
                    (true, Some(test), _) => test.to_owned(),
                    (true, None, false) => elsewhere.join("; "),
                    (true, None, true) => "**none yet**".to_owned(),
                };
                let only = if SERVICE_RULES.iter().any(|(id, _)| *id == rule.id) {
                    ", in runs with services only (`--services`)"
                } else if MACHINE_CRASH_RULES.contains(&rule.id) {
                    ", in machine-crash runs only"
                } else if RESTORE_RULES.contains(&rule.id) {
                    ", in restore runs only (`--crash restore`)"
                } else if TRACED_RULES.contains(&rule.id) {
                    ", in traced runs only (`--points syscalls`, `--crash machine`)"
                } else {
                    ""
                };
                (format!("{}{only}", names.join(", ")), proof)
            }
            Check::Harness(how) => (format!("the harness: {how}"), "—".to_owned()),
            Check::NotChecked(why) => (format!("**not checked**: {why}"), "—".to_owned()),
        };
        out.push_str(&format!("| {} | {text} | {check} | {proof} |\n", rule.id));
    }
    Ok(out)
}

/// What one certification run established about a rule, for the certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleStatus {
    /// Its invariants held in every judged scenario, and a scenario that exercises it passed.
    Verified,
    /// A scenario violated one of its invariants.
    Violated,
    /// Its invariants held, but no scenario that exercises it ran to a full pass (filtered out,
    /// partial without the probe, or not judged): this run says nothing about it.
    NotExercised,
    /// Enforced by the harness while it started and talked to the runtime.
    Enforced,
    /// killpoint does not check it (yet); `note` says why.
    NotChecked,
    /// The runtime is certified under an older contract version, which does not have it
    /// (`--contract`, CONTRACT.md "Versions").
    NotClaimed,
}

/// One rule's line in the certificate.
#[derive(Debug, Clone, Serialize)]
pub struct RuleOutcome {
    pub id: &'static str,
    pub status: RuleStatus,
    pub invariants: Vec<Invariant>,
    /// Why it is not checked, or which scenarios violated it.
    pub note: Option<String>,
}

/// Every rule of [`RULES`] judged from a certification run's verdicts (scenario name, verdict).
pub fn judge_rules(verdicts: &[&crate::judge::Verdict]) -> Vec<RuleOutcome> {
    use crate::judge::Status;
    let judged: Vec<_> = verdicts.iter().filter(|v| v.error.is_none()).collect();
    RULES
        .iter()
        .map(|rule| match rule.check {
            Check::NotChecked(why) => RuleOutcome {
                id: rule.id,
                status: RuleStatus::NotChecked,
                invariants: Vec::new(),
                note: Some(why.to_owned()),
            },
            Check::Harness(how) => RuleOutcome {
                id: rule.id,
                status: if judged.is_empty() { RuleStatus::NotExercised } else { RuleStatus::Enforced },
                invariants: Vec::new(),
                note: Some(how.to_owned()),
            },
            Check::Invariants(invariants) => {
                // A durability rule: a process kill keeps the page cache and shows nothing of it.
                let machine = MACHINE_CRASH_RULES.contains(&rule.id);
                let restore = RESTORE_RULES.contains(&rule.id);
                let judged: Vec<&&crate::judge::Verdict> = judged
                    .iter()
                    .copied()
                    .filter(|v| (!machine || v.crash == Crash::Machine) && (!restore || v.crash == Crash::Restore))
                    .collect();
                // Violated only where a violation names the rule: another rule of the same invariant
                // broken in a scenario leaves this one not established there, not violated.
                let violated: Vec<&str> = judged
                    .iter()
                    .filter(|v| v.violations.iter().any(|x| x.breaks(rule.id)))
                    .map(|v| v.scenario.as_str())
                    .collect();
                // Established by what ran: a full pass of a scenario whose catches show it can fail
                // for this rule, or any full pass for a rule no variant is caught breaking.
                // A service rule is established only by a run that did to the services what it is
                // about (`SERVICE_RULES`), never by the passes of a runtime without services.
                let service = SERVICE_RULES.iter().any(|(id, _)| *id == rule.id);
                let breakable = caught::breakable(rule.id) || service;
                let exercising = |v: &&&crate::judge::Verdict| {
                    v.status() == Status::Pass && (!breakable || v.exercises.contains(&rule.id))
                };
                let (status, note) = if !violated.is_empty() {
                    (RuleStatus::Violated, Some(format!("violated in {}", violated.join(", "))))
                } else if judged.iter().any(exercising) {
                    (RuleStatus::Verified, None)
                } else {
                    let mut wanted: Vec<&str> = Vec::new();
                    // Two variants caught in one scenario name it once.
                    for c in caught::CAUGHT.iter().filter(|c| c.rules.contains(&rule.id)) {
                        if !wanted.contains(&c.scenario) {
                            wanted.push(c.scenario);
                        }
                    }
                    let wanted = match (wanted.is_empty(), SERVICE_RULES.iter().find(|(id, _)| *id == rule.id)) {
                        (_, Some((_, ServiceRun::ServiceFault))) => {
                            "a scenario whose [[service_fault]] fired, with services declared (--services)".to_owned()
                        }
                        (_, Some((_, ServiceRun::WorkerFrozen))) => {
                            "a scenario that freezes the worker, with services declared (--services)".to_owned()
                        }
                        (_, Some((_, ServiceRun::WorkerKilledOrFrozen))) => {
                            "a scenario that kills the worker, with services declared (--services)".to_owned()
                        }
                        (true, None) => "any scenario".to_owned(),
                        (false, None) => format!(
                            "{}, or of a scenario whose [[catches]] catch a variant breaking it",
                            wanted.join(" or ")
                        ),
                    };
                    // A traced rule's standard catches are machine crashes (which always trace):
                    // only their passes exercise it.
                    let crash = if machine || TRACED_RULES.contains(&rule.id) { " under --crash machine" } else { "" };
                    (RuleStatus::NotExercised, Some(format!("needs a full pass of {wanted}{crash}")))
                };
                RuleOutcome { id: rule.id, status, invariants: invariants.to_vec(), note }
            }
        })
        .collect()
}

/// "37 verified, 1 violated (§4-5), …" for the text summary.
pub fn summarise(rules: &[RuleOutcome]) -> String {
    let ids = |status: RuleStatus| -> Vec<&str> { rules.iter().filter(|r| r.status == status).map(|r| r.id).collect() };
    let mut parts = vec![format!("{} verified", ids(RuleStatus::Verified).len())];
    let listed = [
        (RuleStatus::Violated, "violated"),
        (RuleStatus::NotExercised, "not exercised"),
        (RuleStatus::NotClaimed, "not claimed"),
    ];
    for (status, word) in listed {
        let found = ids(status);
        if !found.is_empty() {
            parts.push(format!("{} {word} ({})", found.len(), found.join(", ")));
        }
    }
    parts.push(format!("{} enforced by the harness", ids(RuleStatus::Enforced).len()));
    parts.push(format!("{} not checked", ids(RuleStatus::NotChecked).len()));
    format!("contract rules: {} (docs/coverage.md)", parts.join(", "))
}

/// For one scenario (`killpoint run`): the rules it established and those it violated, one line
/// each, and the rest counted in one line.
pub fn summarise_shown(rules: &[RuleOutcome]) -> String {
    let ids = |status: RuleStatus| -> Vec<&str> { rules.iter().filter(|r| r.status == status).map(|r| r.id).collect() };
    let (established, violated) = (ids(RuleStatus::Verified), ids(RuleStatus::Violated));
    let mut lines = vec![match established.is_empty() {
        true => "contract rules this run established: none".to_owned(),
        false => format!("contract rules this run established: {}", established.join(", ")),
    }];
    if !violated.is_empty() {
        lines.push(format!("contract rules this run violated: {}", violated.join(", ")));
    }
    let count = |status: RuleStatus| ids(status).len();
    let not_claimed = match count(RuleStatus::NotClaimed) {
        0 => String::new(),
        n => format!(", {n} not claimed (an older contract version)"),
    };
    lines.push(format!(
        "the other {}: {} not exercised by this scenario, {} enforced by the harness, {} not checked{not_claimed} (docs/coverage.md)",
        rules.len() - established.len() - violated.len(),
        count(RuleStatus::NotExercised),
        count(RuleStatus::Enforced),
        count(RuleStatus::NotChecked)
    ));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn standard_scenarios() -> Vec<Scenario> {
        crate::scenario::standard::ScenarioSet::standard()
            .load()
            .expect("scenarios dir")
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("every standard scenario loads")
    }

    #[test]
    fn every_rule_of_the_contract_has_a_row_and_every_row_a_rule() {
        let stated = contract_rules(CONTRACT_TEXT).unwrap_or_default();
        let missing: Vec<String> = stated
            .iter()
            .filter(|s| !RULES.iter().any(|r| r.id == s.id))
            .map(|s| format!("CONTRACT.md:{}: {} \"{}\"", s.line, s.id, s.text))
            .collect();
        assert!(missing.is_empty(), "rules of the contract with no row in coverage::RULES:\n{}", missing.join("\n"));
        let stale: Vec<&str> = RULES.iter().filter(|r| !stated.iter().any(|s| s.id == r.id)).map(|r| r.id).collect();
        assert!(stale.is_empty(), "rows of coverage::RULES for rules the contract does not number: {stale:?}");
        let order: Vec<&str> = stated.iter().map(|s| s.id.as_str()).collect();
        let rows: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(order, rows, "coverage::RULES must list the rules in the contract's order");
    }

    #[test]
    fn every_invariant_is_proven_by_a_broken_variant() {
        let scenarios = standard_scenarios();
        let unproven: Vec<&str> = Invariant::ALL
            .into_iter()
            .filter(|i| !PROVEN_ELSEWHERE.iter().any(|(e, _)| e == i))
            .filter(|i| {
                !scenarios.iter().flat_map(|s| &s.catches).any(|c| c.invariants.iter().any(|n| n == i.as_str()))
            })
            .map(|i| i.as_str())
            .collect();
        assert!(unproven.is_empty(), "invariants no scenario's [[catches]] proves can fail: {unproven:?}");
    }

    #[test]
    fn every_row_of_caught_is_a_catch_of_its_standard_scenario() {
        let scenarios = standard_scenarios();
        let mut wrong = Vec::new();
        for row in caught::CAUGHT {
            match scenarios.iter().find(|s| s.name == row.scenario) {
                None => wrong.push(format!("{} → {}: no such standard scenario", row.broken, row.scenario)),
                Some(s) if !s.catches.iter().any(|c| c.broken == row.broken) => {
                    wrong.push(format!("{} → {}: the scenario has no [[catches]] of it", row.broken, row.scenario))
                }
                Some(_) if row.rules.is_empty() => {
                    wrong.push(format!("{} → {}: names no rule", row.broken, row.scenario))
                }
                Some(_) => {}
            }
        }
        assert!(wrong.is_empty(), "caught.rs rows the scenarios do not back:\n{}", wrong.join("\n"));
    }

    /// Issue 32: one bug, its own rules. A violation of `at_most_once` breaks §5-1; the other
    /// rules `at_most_once` checks are not established by that scenario, not violated, and a
    /// scenario that passed and exercises them still verifies them.
    #[test]
    fn a_violation_makes_only_the_rules_it_names_violated() {
        use crate::judge::{Verdict, Violation};
        let verdict = |scenario: &str, violations: Vec<Violation>, exercises: Vec<&'static str>| Verdict {
            scenario: scenario.into(),
            probe: true,
            crash: Crash::Process,
            violations,
            exercises,
            coverage: Vec::new(),
            error: None,
            unreachable: Vec::new(),
            reasked: Vec::new(),
            needs_probe_services: Vec::new(),
            restore_risks: Vec::new(),
        };
        let twice =
            Violation::new(breach::breach!(AtMostOnce, "§5-1"), Some("charge".into()), "twice".into(), Vec::new());
        let failed = verdict("after_dispatch", vec![twice], vec!["§4-10", "§5-1"]);
        let passed = verdict("provider_rejects", Vec::new(), vec!["§4-7"]);
        let rules = judge_rules(&[&failed, &passed]);
        let status = |id: &str| rules.iter().find(|r| r.id == id).map(|r| r.status);
        assert_eq!(status("§5-1"), Some(RuleStatus::Violated));
        assert_eq!(status("§4-10"), Some(RuleStatus::NotExercised), "at_most_once checks it, but nothing broke it");
        assert_eq!(status("§4-7"), Some(RuleStatus::Verified), "provider_rejects passed and exercises it");
        assert_eq!(status("§6-4"), Some(RuleStatus::NotExercised), "no verdict exercises it");
    }

    #[test]
    fn coverage_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/coverage.md");
        let generated = document().unwrap_or_else(|p| panic!("{}", p.join("\n")));
        if std::env::var_os("KILLPOINT_UPDATE_COVERAGE").is_some() {
            std::fs::write(path, &generated).expect("write docs/coverage.md");
            return;
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == generated,
            "docs/coverage.md is stale: run `KILLPOINT_UPDATE_COVERAGE=1 cargo test -p killpoint --lib coverage` and commit it"
        );
    }
}
