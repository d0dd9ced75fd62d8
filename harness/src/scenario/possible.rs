//! Whether a parsed scenario can happen at all: faults that could never fire and freezes that
//! mean nothing (mistakes of the file, which would otherwise fail every run as the runtime's), and
//! `[[catches]]` naming broken variants the reference runtime has.

use crate::model::boundary::{Boundary, unknown_word};
use crate::scenario::{Fault, Operation, Outcome, Revoke, Scenario, ScenarioError, embedded, line_col};
use fake_tool::ToolKind;
use serde::Deserialize;
use toml::Spanned;

impl Scenario {
    /// Every `[[catches]]` names one of `known` (the reference runtime's broken variants, from
    /// [`crate::model::variants::of`]): a misspelt name is the file's error, at its line, naming the
    /// known ones — not the runtime's usage text at run time.
    pub fn check_catches(&self, known: &[crate::model::variants::Variant]) -> Result<(), ScenarioError> {
        #[derive(Deserialize)]
        struct Catches {
            #[serde(default)]
            catches: Vec<Spanned<CatchName>>,
        }
        #[derive(Deserialize)]
        struct CatchName {
            broken: Spanned<String>,
        }
        let Some(unknown) = self.catches.iter().find(|c| !known.iter().any(|k| k.name == c.broken)) else {
            return Ok(());
        };
        let names: Vec<&str> = known.iter().map(|k| k.name.as_str()).collect();
        let mut error = ScenarioError {
            path: self.path.clone(),
            line_col: None,
            message: format!(
                "[[catches]]: {} (the reference runtime's `--broken` variants)",
                unknown_word("broken variant", &unknown.broken, &names)
            ),
            also: Vec::new(),
        };
        // The place, read back from the file (embedded or on disk) the scenario came from.
        let text = match embedded::text_of(&self.path) {
            Some(text) => Some(text.to_owned()),
            None => std::fs::read_to_string(&self.path).ok(),
        };
        if let Some(text) = text
            && let Ok(file) = toml::from_str::<Catches>(&text)
            && let Some(c) = file.catches.iter().find(|c| *c.get_ref().broken.get_ref() == unknown.broken)
        {
            error.line_col = Some(line_col(&text, c.get_ref().broken.span().start));
        }
        Err(error)
    }
}

/// A freeze is only meaningful where the contract says a commit or a request follows the
/// boundary: that is what the resumed incarnation must not do once it is outlived.
pub(super) fn freezable(at: Boundary, revokes: bool, operation: &str) -> Result<(), String> {
    const FREEZABLE: [Boundary; 3] =
        [Boundary::BeforeDispatch, Boundary::AfterProviderSuccess, Boundary::AfterDeliverySend];
    if !FREEZABLE.contains(&at) {
        return Err(format!(
            "`action = \"freeze\"` applies at a boundary the runtime announces and where a commit or a request follows it (`before_dispatch`, `after_provider_success`, `after_delivery_send`), not `{at}`"
        ));
    }
    if revokes {
        return Err(format!(
            "`revoke` does not go with `action = \"freeze\"` (fault on `{operation}`): a freeze tests fencing, not policy; put the revocation on a fault of its own"
        ));
    }
    Ok(())
}

/// Why `fault` can never fire, when the scenario itself rules it out: a fault that cannot be
/// reached would fail every run with `faults_reached`, so it is a mistake in the file.
pub(super) fn never_reached(fault: &Fault, operations: &[Operation], faults: &[Fault]) -> Option<String> {
    let op = operations.iter().find(|o| o.id == fault.operation)?;
    let id = &op.id;
    match fault.at {
        Boundary::AfterProviderSuccess | Boundary::AfterResultWrite | Boundary::AfterDeliverySend
            if op.expect == Outcome::SucceededOrGaveUp =>
        {
            Some(format!(
                "`{id}` is expected to end `{}`: a runtime that gives up at its attempt bound never reaches `{}` (only a success does)",
                op.expect, fault.at
            ))
        }
        Boundary::AfterResultWrite | Boundary::AfterDeliverySend if op.expect != Outcome::Succeeded => Some(format!(
            "`{id}` is expected to end `{}`, so it never reaches `{}` (only a success is written and delivered)",
            op.expect, fault.at
        )),
        Boundary::AfterProviderSuccess if matches!(op.expect, Outcome::Refused | Outcome::Failed) => Some(format!(
            "`{id}` is expected to end `{}`, so the provider never confirms a success for it (`{}`)",
            op.expect, fault.at
        )),
        Boundary::AfterDispatch if op.tool == ToolKind::NonIdempotentNoLookup && fault.occurrence > 1 => Some(format!(
            "`{id}` uses {} ({}), which has no lookup: after an unknown outcome it is paused and never called again, so there is no call {} to fault",
            op.tool.tool_name(),
            op.tool.as_str(),
            fault.occurrence
        )),
        Boundary::AfterPolicyRevocation => {
            // Some fault must withdraw this operation's tool (for its tenant) or cancel it.
            let refused = faults.iter().any(|f| {
                let Some(other) = operations.iter().find(|o| o.id == f.operation) else { return false };
                f.revoke.iter().any(|r| match r {
                    Revoke::Tool => other.tenant == op.tenant && other.tool == op.tool,
                    Revoke::Operation => other.id == op.id,
                    Revoke::Destination(_) => false,
                })
            });
            (!refused).then(|| format!(
                "no fault revokes `{}` for tenant `{}` or cancels `{id}` (`revoke = [\"tool\"]` or `[\"operation\"]`), so the policy never refuses it and `{}` is never reached",
                op.tool.tool_name(),
                op.tenant,
                fault.at
            ))
        }
        _ => None,
    }
}
