//! Asking the policy service: before every new attempt, and before every send.

use anyhow::Result;

use super::Shared;
use crate::backoff::Task;
use crate::broken::Broken;
use crate::model::{AuditEvent, Operation};
use crate::policy::{Decision, Subject};

impl Shared {
    /// May this operation's tool be called now? Asked before every new attempt, including those
    /// that follow a reconciliation: permission given earlier may have been revoked since.
    pub(super) async fn tool_policy(&self, operation: &Operation) -> Result<Decision> {
        if self.broken == Some(Broken::NoPolicyRecheck)
            && self.store.has_audit_event(&operation.id, AuditEvent::PolicyAllowed)?
        {
            // BROKEN: an approval on record is taken as still valid; a revocation since is missed.
            return Ok(Decision::Allowed);
        }
        if self.broken == Some(Broken::RestoredGrant)
            && self.store.is_restored()
            && self.store.has_audit_event(&operation.id, AuditEvent::PolicyAllowed)?
        {
            // BROKEN: on a restored backup, the approval the backup holds is taken for the
            // operation's own, still in force: the revocation the world saw since is missed.
            return Ok(Decision::Allowed);
        }
        let tool = &operation.decided_tool()?.name;
        let decision = self.ask_policy(operation, Subject::Tool(tool)).await;
        if decision == Decision::Allowed {
            self.backoff().succeeded(&Task::Operation(operation.id.clone()));
            self.store.record_audit(
                &operation.id,
                AuditEvent::PolicyAllowed,
                &format!("tool {tool} for {}/{}", operation.tenant, operation.actor),
            )?;
        }
        Ok(decision)
    }

    /// One question to the policy service, asked afresh every time: an answer is about *now*, and
    /// a permission can be withdrawn between two attempts or two sends without any crash.
    pub(super) async fn ask_policy(&self, operation: &Operation, subject: Subject<'_>) -> Decision {
        let asked = match subject {
            Subject::Tool(tool) => (operation.id.clone(), format!("tool {tool}")),
            Subject::Destination(destination) => (operation.id.clone(), format!("destination {destination}")),
        };
        if self.broken == Some(Broken::PolicyCache) {
            // BROKEN: an earlier approval, kept in memory, stands in for asking again.
            if self.policy_cache.lock().unwrap_or_else(|p| p.into_inner()).contains(&asked) {
                return Decision::Allowed;
            }
            let decision = self.policy.check(&operation.tenant, &operation.actor, &operation.id, subject).await;
            if decision == Decision::Allowed {
                self.policy_cache.lock().unwrap_or_else(|p| p.into_inner()).insert(asked);
            }
            return decision;
        }
        self.policy.check(&operation.tenant, &operation.actor, &operation.id, subject).await
    }
}
