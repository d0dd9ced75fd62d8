//! A withdrawn permission, and what it covers.
//!
//! Below both its users: faults carry revocations to put in force when a call arrives, and the
//! policy service holds the ones in force. It must import nothing above the ledger (not
//! `faults`, not `policy`), or the two would reach each other again.

use crate::ledger::Subject;
use serde::{Deserialize, Serialize};

/// A withdrawn permission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    pub tenant: String,
    /// `None` revokes for every actor of the tenant.
    pub actor: Option<String>,
    pub subject: Subject,
}

impl Revocation {
    pub(crate) fn covers(&self, tenant: &str, actor: &str, operation: Option<&str>, subject: &Subject) -> bool {
        // A cancelled operation may not be attempted; its deliveries are not this revocation's.
        let cancelled = matches!(
            (&self.subject, subject, operation),
            (Subject::Operation(o), Subject::Tool(_), Some(op)) if o == op
        );
        self.tenant == tenant
            && self.actor.as_deref().is_none_or(|a| a == actor)
            && (&self.subject == subject || cancelled)
    }
}
