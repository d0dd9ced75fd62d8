//! The coverage table: every numbered rule of the contract (`[§4-3]` in `CONTRACT.md`) and what
//! checks it. This is the one place that says which rules killpoint verifies and which it does not.
//!
//! The rule texts come from `CONTRACT.md` itself (compiled in); the checks and their proofs (broken
//! variant → scenario) from [`RULES`]. `docs/coverage.md` is generated from the two, and tests fail
//! when the contract gains a rule without a row here, a row names a rule the contract lost, a
//! proof is not backed by that scenario's `[[catches]]`, or the document is stale.

use crate::model::invariant::Invariant;
use serde::Serialize;

/// The contract, as compiled into this harness.
pub const CONTRACT_TEXT: &str = include_str!("../../CONTRACT.md");

/// How a rule is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Judged in every run from the ledgers by these invariants.
    Invariants(&'static [Invariant]),
    /// Enforced by the harness while it starts or talks to the runtime: a runtime that breaks it
    /// cannot get a verdict at all. The text says how.
    Harness(&'static str),
    /// Not checked yet; the text says why.
    NotChecked(&'static str),
}

/// One rule of the contract and its check.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// `§4-3`, as tagged in the contract.
    pub id: &'static str,
    pub check: Check,
    /// `(broken variant, scenario)`: the scenario's `[[catches]]` names the variant and one of the
    /// rule's invariants, so running it proves the check can fail for this rule. Verified by a
    /// test against the scenario files.
    pub proven_by: &'static [(&'static str, &'static str)],
}

use Invariant::*;

const fn by(invariants: &'static [Invariant]) -> Check {
    Check::Invariants(invariants)
}

/// Every numbered rule of `CONTRACT.md`, in the contract's order.
pub const RULES: &[Rule] = &[
    Rule {
        id: "§2-1",
        check: Check::NotChecked(
            "the harness refuses a runtime that declares another version (a harness-side check); it never starts a runtime with a version it does not speak",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-2",
        check: Check::NotChecked(
            "the harness cannot see where a process writes; state kept elsewhere survives its restarts too. Syscall tracing (`--points syscalls`) will see it",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-3",
        check: Check::Harness(
            "every kill also sweeps processes carrying the token (tests/hostile.rs); a runtime that drops it from a child's environment leaves an orphan the sweep misses",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-4",
        check: Check::NotChecked(
            "the harness never removes the data dir during a run; removing it would be the harness's fault, not the runtime's",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-5",
        check: Check::NotChecked(
            "needs a network namespace (privileges) to observe; all the fake world's addresses are loopback",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-6",
        check: Check::Harness(
            "the harness waits for the ready line with a deadline and stops the run with the runtime's last output if it does not come (tests/hostile.rs, tests/certify.rs)",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-7",
        check: Check::Harness(
            "a runtime that declares the probe and has not connected by the ready deadline stops the run with an error saying so (tests/hostile.rs)",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§2-8",
        check: Check::NotChecked(
            "the harness reads the probe only after the ready line, so an early announcement only delays the runtime itself",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§3-1",
        check: Check::NotChecked(
            "the provider counts effects by the identity planted in the arguments; a runtime that changes or drops them is caught only where that breaks another invariant (an unreached fault, a missing effect). Next: record each call's arguments and compare them with the submission",
        ),
        proven_by: &[],
    },
    Rule { id: "§3-2", check: by(&[IntentDurable]), proven_by: &[("ack-before-durable", "after_submit")] },
    Rule { id: "§3-3", check: by(&[IdempotentSubmission]), proven_by: &[("submit-upsert", "after_submit")] },
    Rule { id: "§3-4", check: by(&[IdempotentSubmission]), proven_by: &[("submit-upsert", "after_submit")] },
    Rule { id: "§3-5", check: by(&[IdempotentSubmission]), proven_by: &[] },
    Rule {
        id: "§3-6",
        check: by(&[TruthfulStatus]),
        proven_by: &[("count-refused-attempt", "after_policy_revocation")],
    },
    Rule { id: "§3-7", check: by(&[PolicyRespected]), proven_by: &[] },
    Rule { id: "§3-8", check: by(&[TruthfulStatus]), proven_by: &[("split-outbox", "after_result_write")] },
    Rule { id: "§3-9", check: by(&[IntentDurable]), proven_by: &[("ack-before-durable", "after_submit")] },
    Rule { id: "§3-10", check: by(&[Settled]), proven_by: &[] },
    Rule {
        id: "§4-1",
        check: by(&[PolicyChecked, PolicyRespected]),
        proven_by: &[("policy-cache", "attempt_bound"), ("no-policy-recheck", "after_policy_revocation")],
    },
    Rule {
        id: "§4-2",
        check: by(&[ExpectedOutcome, PolicyRespected]),
        proven_by: &[("no-policy-recheck", "after_policy_revocation")],
    },
    Rule { id: "§4-3", check: by(&[TruthfulStatus, ExpectedOutcome]), proven_by: &[] },
    Rule { id: "§4-4", check: by(&[AtMostOnce, NoBlindRetry]), proven_by: &[("no-write-ahead", "after_dispatch")] },
    Rule {
        id: "§4-5",
        check: by(&[StableProviderKey]),
        proven_by: &[("fresh-key", "after_dispatch"), ("fresh-key", "provider_unavailable")],
    },
    Rule {
        id: "§4-6",
        check: by(&[DeliveredOnce, TruthfulStatus]),
        proven_by: &[("split-outbox", "after_result_write")],
    },
    Rule {
        id: "§4-7",
        check: by(&[ExpectedOutcome, TruthfulStatus]),
        proven_by: &[("retry-on-4xx", "provider_rejects")],
    },
    Rule {
        id: "§4-8",
        check: by(&[NoBlindRetry, TruthfulStatus, AtMostOnce]),
        proven_by: &[("trust-2xx", "unreadable_success"), ("blind-retry", "provider_unavailable")],
    },
    Rule { id: "§4-9", check: Check::NotChecked("the fake provider never answers with a redirect"), proven_by: &[] },
    Rule {
        id: "§4-10",
        check: by(&[NoBlindRetry, AtMostOnce]),
        proven_by: &[
            ("blind-retry", "after_dispatch"),
            ("blind-retry", "after_provider_success"),
            ("one-dispatch-slot", "concurrent_dispatch"),
        ],
    },
    Rule {
        id: "§4-11",
        check: by(&[NoBlindRetry, AtMostOnce, TruthfulStatus]),
        proven_by: &[("blind-retry", "after_dispatch"), ("blind-retry", "lookup_unavailable")],
    },
    Rule {
        id: "§4-12",
        check: by(&[NoBlindRetry, AtMostOnce]),
        proven_by: &[
            ("lookup-error-as-miss", "lookup_unavailable"),
            ("restart-after-failed-lookup", "kill_while_reconciling"),
        ],
    },
    Rule { id: "§4-13", check: by(&[NoBlindRetry, AtMostOnce]), proven_by: &[("blind-retry", "after_dispatch")] },
    Rule {
        id: "§4-14",
        check: by(&[NoExecutionForDelivery]),
        proven_by: &[("rerun-on-delivery", "after_delivery_send")],
    },
    Rule { id: "§4-15", check: by(&[TruthfulStatus]), proven_by: &[("fail-at-bound", "attempt_bound")] },
    Rule {
        id: "§5-1",
        check: by(&[AtMostOnce]),
        proven_by: &[
            ("blind-retry", "after_dispatch"),
            ("no-write-ahead", "after_dispatch"),
            ("rerun-on-delivery", "delivery_dead_letter"),
        ],
    },
    Rule { id: "§6-1", check: by(&[DeliveredOnce]), proven_by: &[("trust-2xx", "unreadable_success")] },
    Rule {
        id: "§6-2",
        check: by(&[StableDeliveryKey]),
        proven_by: &[("fresh-delivery-key", "after_delivery_send"), ("fresh-delivery-key", "delivery_dead_letter")],
    },
    Rule {
        id: "§6-3",
        check: by(&[DeliveredOnce]),
        proven_by: &[("split-outbox", "after_result_write"), ("fresh-delivery-key", "after_delivery_send")],
    },
    Rule { id: "§6-4", check: by(&[DeliveryBackoff]), proven_by: &[("no-backoff", "attempt_bound")] },
    Rule { id: "§6-5", check: by(&[DeadLetterBound]), proven_by: &[("dead-letter-early", "delivery_dead_letter")] },
    Rule {
        id: "§6-6",
        check: by(&[NoExecutionForDelivery, AtMostOnce]),
        proven_by: &[("rerun-on-delivery", "after_delivery_send"), ("rerun-on-delivery", "delivery_dead_letter")],
    },
    Rule {
        id: "§6-7",
        check: by(&[PolicyChecked, PolicyRespected]),
        proven_by: &[("policy-cache", "delivery_dead_letter"), ("deliver-refused", "revoked_destination")],
    },
    Rule {
        id: "§7-1",
        check: Check::Harness(
            "the harness answers each announcement before reading the next, and kills at the announcement; a runtime that does not block is killed a little later than announced, which the syscall-level points will expose",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§7-2",
        check: Check::Harness(
            "an interleaved or malformed probe line stops the run with the line quoted (tests/hostile.rs)",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§7-3",
        check: Check::NotChecked(
            "the harness closes the probe only when it kills the runtime, so a runtime that ignores a closed probe is killed anyway",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§7-4",
        check: Check::NotChecked(
            "the harness trusts where the runtime says it is; syscall-level crash points (`--points syscalls`) will cross-check announcements against durable writes and requests",
        ),
        proven_by: &[],
    },
    Rule {
        id: "§7-5",
        check: Check::NotChecked(
            "a runtime that refuses tracing fails to start under the tracer, which the report shows as its start failing; no invariant judges it",
        ),
        proven_by: &[],
    },
    Rule { id: "§8-1", check: by(&[PolicyChecked]), proven_by: &[] },
    Rule {
        id: "§8-2",
        check: by(&[PolicyChecked]),
        proven_by: &[("policy-cache", "attempt_bound"), ("policy-cache", "delivery_dead_letter")],
    },
    Rule {
        id: "§8-3",
        check: by(&[PolicyChecked, PolicyRespected]),
        proven_by: &[
            ("policy-cache", "attempt_bound"),
            ("no-policy-recheck", "after_policy_revocation"),
            ("no-policy-recheck", "revoke_without_kill"),
        ],
    },
    Rule {
        id: "§8-4",
        check: by(&[PolicyChecked, PolicyRespected]),
        proven_by: &[("policy-fail-open", "policy_unavailable")],
    },
    Rule {
        id: "§8-5",
        check: by(&[PolicyRespected]),
        proven_by: &[
            ("no-policy-recheck", "after_policy_revocation"),
            ("no-policy-recheck", "revoke_without_kill"),
            ("policy-fail-open", "policy_unavailable"),
            ("deliver-refused", "revoked_destination"),
        ],
    },
    Rule { id: "§9-1", check: by(&[Fenced]), proven_by: &[("no-fence-header", "zombie_worker")] },
    Rule {
        id: "§9-2",
        // The outlived incarnation's next step at a freezable boundary is a commit: a request of
        // that operation after its resume proves the commit landed (or was skipped). What it
        // wrote also shows in the final reads (`delivered_once`, `expected_outcome`, …), but
        // those invariants judge other rules too, so they do not speak for this one.
        check: by(&[Fenced]),
        proven_by: &[("no-store-fence", "zombie_worker")],
    },
    // Checked (a request of the same work after a `409 fenced`; no exit by the deadline), but no
    // broken variant reaches it yet: the reference's store fence stops a resumed incarnation
    // before the world can refuse it.
    Rule { id: "§9-3", check: by(&[Fenced]), proven_by: &[("fenced-hangs", "zombie_worker")] },
    Rule {
        id: "§11-1",
        check: Check::NotChecked(
            "that every family is served is not checked: a missing series counts as 0, and only dead letters, reconciliations and policy refusals are held against the ledgers (§11-2)",
        ),
        proven_by: &[],
    },
    Rule { id: "§11-2", check: by(&[TruthfulStatus]), proven_by: &[("miscounts-dead-letters", "monitoring_signals")] },
];

/// A numbered rule as the contract states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContractRule {
    pub id: String,
    /// The sentence(s) the tag closes, as plain text.
    pub text: String,
    /// 1-based line of the tag in `CONTRACT.md`.
    pub line: usize,
}

/// The numbered rules of the contract text, in order, or every problem found: a sentence with
/// MUST / MUST NOT / SHOULD and no rule number, a number used twice, a malformed tag.
pub fn contract_rules(text: &str) -> Result<Vec<ContractRule>, Vec<String>> {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for block in blocks(text) {
        // Sentences of the block, each with the tags that close it.
        let mut sentence = String::new();
        let mut chars = block.text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '[' && block.text[i..].starts_with("[§") {
                let Some(end) = block.text[i..].find(']') else {
                    problems.push(format!("CONTRACT.md:{}: a rule tag `[§…` is not closed", block.line));
                    break;
                };
                let id = &block.text[i + 1..i + end];
                if !valid_id(id) {
                    problems
                        .push(format!("CONTRACT.md:{}: expected a rule tag like `[§4-3]`, found `[{id}]`", block.line));
                }
                let said = plain(&sentence);
                if !has_keyword(&said) {
                    problems.push(format!(
                        "CONTRACT.md:{}: rule {id} tags a sentence without MUST, MUST NOT or SHOULD: \"{said}\"",
                        block.line
                    ));
                }
                if rules.iter().any(|r: &ContractRule| r.id == id) {
                    problems.push(format!("CONTRACT.md:{}: rule {id} is numbered twice", block.line));
                }
                rules.push(ContractRule { id: id.to_owned(), text: said, line: block.line });
                sentence.clear();
                for _ in 0..block.text[i..i + end].chars().count() {
                    chars.next();
                }
                continue;
            }
            sentence.push(c);
            if ends_sentence(&block.text, i, c) {
                let said = plain(&sentence);
                if has_keyword(&said) {
                    problems.push(format!(
                        "CONTRACT.md:{}: a sentence with MUST / MUST NOT / SHOULD has no rule number `[§n-m]`: \"{said}\"",
                        block.line
                    ));
                }
                sentence.clear();
            }
        }
        let said = plain(&sentence);
        if has_keyword(&said) {
            problems.push(format!(
                "CONTRACT.md:{}: a sentence with MUST / MUST NOT / SHOULD has no rule number `[§n-m]`: \"{said}\"",
                block.line
            ));
        }
    }
    if problems.is_empty() { Ok(rules) } else { Err(problems) }
}

/// A paragraph, list item or table row of the contract, starting at `line`.
struct Block {
    line: usize,
    text: String,
}

/// The normative part of the contract (from section 1 on), cut into blocks; code is skipped.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut started = false;
    let mut in_code = false;
    let mut current: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("## 1.") {
            started = true;
        }
        if !started {
            continue;
        }
        if trimmed.starts_with("```") {
            in_code = !in_code;
            blocks.extend(current.take());
            continue;
        }
        let starts_item = trimmed.starts_with("- ")
            || trimmed.starts_with('|')
            || trimmed.starts_with('#')
            || after_list_number(trimmed).is_some();
        if in_code || trimmed.is_empty() || starts_item {
            blocks.extend(current.take());
        }
        if in_code || trimmed.is_empty() {
            continue;
        }
        match &mut current {
            Some(block) => {
                block.text.push(' ');
                block.text.push_str(trimmed);
            }
            None => current = Some(Block { line: n + 1, text: trimmed.to_owned() }),
        }
        if trimmed.starts_with('|') || trimmed.starts_with('#') {
            blocks.extend(current.take());
        }
    }
    blocks.extend(current);
    blocks
}

fn ends_sentence(text: &str, i: usize, c: char) -> bool {
    if c != '.' {
        return false;
    }
    let rest = &text[i + 1..];
    // "e.g." and "i.e." do not end a sentence; nor does a dot inside a word or a number.
    let before = &text[..i];
    if before.ends_with("e.g") || before.ends_with("i.e") {
        return false;
    }
    rest.is_empty() || rest.starts_with(' ')
}

fn has_keyword(sentence: &str) -> bool {
    sentence.split(|c: char| !c.is_ascii_alphabetic()).any(|w| w == "MUST" || w == "SHOULD")
}

fn valid_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix('§') else { return false };
    let Some((section, n)) = rest.split_once('-') else { return false };
    [section, n].iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// The text after a numbered list item's marker (`11. `), if `line` starts with one.
fn after_list_number(line: &str) -> Option<&str> {
    line.split_once(". ").filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).map(|(_, rest)| rest)
}

/// Markdown emphasis and list markers removed, white space folded.
fn plain(text: &str) -> String {
    let text = text.replace("**", "");
    let text = text.trim().trim_start_matches("- ").trim();
    let text = after_list_number(text).unwrap_or(text);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A rule that continues a sentence after another rule's tag: ", and MUST NOT …".
    text.trim_start_matches([',', ';', ' ']).trim_start_matches("and ").to_owned()
}

/// `docs/coverage.md`, generated.
pub fn document() -> Result<String, Vec<String>> {
    let stated = contract_rules(CONTRACT_TEXT)?;
    let mut out = String::new();
    out.push_str(
        "# Coverage: every rule of the contract, and what checks it\n\n\
         Generated from `CONTRACT.md`, `harness/src/coverage.rs` and the scenarios' `[[catches]]` \
         by `cargo test` (`coverage_document_is_current`); do not edit by hand — run\n\
         `KILLPOINT_UPDATE_COVERAGE=1 cargo test -p killpoint --lib coverage` to rewrite it.\n\n\
         *Checked by* names the invariants (`harness/src/invariant.rs`) that judge the rule in every \
         run. *Proven by* names the broken variants of the reference runtime (`killpoint-runtime --broken …`) \
         that a scenario catches on one of those invariants — the proof that the check can fail.\n\n",
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
                let proofs: Vec<String> =
                    rule.proven_by.iter().map(|(broken, scenario)| format!("`{broken}` → `{scenario}`")).collect();
                let proof = if proofs.is_empty() { "**none yet**".to_owned() } else { proofs.join(", ") };
                (names.join(", "), proof)
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
                let violated: Vec<&str> = judged
                    .iter()
                    .filter(|v| v.violations.iter().any(|x| invariants.contains(&x.invariant)))
                    .map(|v| v.scenario.as_str())
                    .collect();
                let exercising = |v: &&&crate::judge::Verdict| {
                    v.status() == Status::Pass
                        && (rule.proven_by.is_empty() || rule.proven_by.iter().any(|(_, s)| *s == v.scenario))
                };
                let (status, note) = if !violated.is_empty() {
                    (RuleStatus::Violated, Some(format!("violated in {}", violated.join(", "))))
                } else if judged.iter().any(exercising) {
                    (RuleStatus::Verified, None)
                } else {
                    let wanted: Vec<&str> = rule.proven_by.iter().map(|(_, s)| *s).collect();
                    (RuleStatus::NotExercised, Some(format!("needs a full pass of {}", wanted.join(" or "))))
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
    for (status, word) in [(RuleStatus::Violated, "violated"), (RuleStatus::NotExercised, "not exercised")] {
        let found = ids(status);
        if !found.is_empty() {
            parts.push(format!("{} {word} ({})", found.len(), found.join(", ")));
        }
    }
    parts.push(format!("{} enforced by the harness", ids(RuleStatus::Enforced).len()));
    parts.push(format!("{} not checked", ids(RuleStatus::NotChecked).len()));
    format!("contract rules: {} (docs/coverage.md)", parts.join(", "))
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
    fn every_normative_sentence_of_the_contract_is_numbered() {
        if let Err(problems) = contract_rules(CONTRACT_TEXT) {
            panic!("CONTRACT.md:\n{}", problems.join("\n"));
        }
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

    /// Invariants proven by a test of their own rather than by a broken variant of the reference
    /// runtime: no runtime bug is needed to show that they can fail.
    const PROVEN_ELSEWHERE: [(Invariant, &str); 2] = [
        (Invariant::Settled, "tests/hostile.rs: a runtime stuck after a boundary"),
        (Invariant::FaultsReached, "tests/checker_proofs.rs: a fault at an occurrence the workload never reaches"),
    ];

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
    fn every_proof_names_a_catch_of_its_scenario_on_one_of_the_rules_invariants() {
        let scenarios = standard_scenarios();
        let mut wrong = Vec::new();
        for rule in RULES {
            let invariants = match rule.check {
                Check::Invariants(i) => i,
                _ if rule.proven_by.is_empty() => continue,
                _ => {
                    wrong.push(format!("{}: not checked by invariants, so nothing can prove it", rule.id));
                    continue;
                }
            };
            for (broken, name) in rule.proven_by {
                let Some(scenario) = scenarios.iter().find(|s| s.name == *name) else {
                    wrong.push(format!("{}: no scenario `{name}`", rule.id));
                    continue;
                };
                let caught = scenario.catches.iter().any(|c| {
                    c.broken == *broken && c.invariants.iter().any(|n| invariants.iter().any(|i| i.as_str() == n))
                });
                if !caught {
                    wrong.push(format!(
                        "{}: `{name}` has no [[catches]] of `{broken}` on any of {invariants:?}",
                        rule.id
                    ));
                }
            }
        }
        assert!(wrong.is_empty(), "coverage::RULES proofs that the scenarios do not back:\n{}", wrong.join("\n"));
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

    #[test]
    fn the_parser_finds_untagged_and_malformed_rules() {
        let text = "## 1. x\n\nA runtime MUST do a [§1-1]. It SHOULD do b.\n\n- It MUST do c [1-2].\n\n| a | MUST d [§1-1] |\n";
        let problems = contract_rules(text).unwrap_err();
        assert!(problems.iter().any(|p| p.contains("has no rule number") && p.contains("SHOULD do b")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("numbered twice")), "{problems:?}");
        let ok = contract_rules("## 1. x\n\nIt MUST do a, e.g. b [§1-1].\n").unwrap();
        assert_eq!(ok[0].text, "It MUST do a, e.g. b");
    }
}
