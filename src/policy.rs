//! The policy service (CONTRACT.md §8): may this tenant and actor call this tool, or send to this
//! destination, *now*? Asked before every new attempt and every delivery send, because a decision
//! made at submission time may have been revoked since.

use reqwest::{Client, StatusCode, Url};
use serde::{Deserialize, Serialize};

use crate::broken::Broken;
use crate::http::{describe_error, describe_failure, endpoint, send};

#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    Refused(String),
    /// No decision could be obtained. Never read as permission: the caller waits and asks again.
    Unreachable(String),
}

/// What is being asked about.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject<'a> {
    Tool(&'a str),
    Destination(&'a str),
}

/// `{"tenant": …, "actor": …, "operation_id": …, "tool": …}` or `{…, "destination": …}`.
#[derive(Serialize)]
struct Check<'a> {
    tenant: &'a str,
    actor: &'a str,
    /// Lets the policy service refuse one operation (cancelled, expired) as well as a permission.
    operation_id: &'a str,
    #[serde(flatten)]
    subject: Subject<'a>,
}

#[derive(Deserialize)]
struct Verdict {
    allowed: bool,
    reason: Option<String>,
}

pub struct Policy {
    http: Client,
    base: Url,
    broken: Option<Broken>,
}

impl Policy {
    pub fn new(http: Client, base: Url) -> Policy {
        Policy { http, base, broken: None }
    }

    /// The policy client of a `--broken` runtime.
    pub fn with_broken(self, broken: Option<Broken>) -> Policy {
        Policy { broken, ..self }
    }

    pub async fn check(&self, tenant: &str, actor: &str, operation_id: &str, subject: Subject<'_>) -> Decision {
        match self.ask(tenant, actor, operation_id, subject).await {
            // BROKEN: no decision is taken for permission ("fail open").
            Decision::Unreachable(_) if self.broken == Some(Broken::PolicyFailOpen) => Decision::Allowed,
            decision => decision,
        }
    }

    async fn ask(&self, tenant: &str, actor: &str, operation_id: &str, subject: Subject<'_>) -> Decision {
        let check = Check { tenant, actor, operation_id, subject };
        let sent = send(self.http.post(endpoint(&self.base, &["check"])).json(&check)).await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => return Decision::Unreachable(describe_error(&error)),
        };
        if response.status() != StatusCode::OK {
            return Decision::Unreachable(describe_failure(response).await);
        }
        match response.json::<Verdict>().await {
            Ok(Verdict { allowed: true, .. }) => Decision::Allowed,
            Ok(Verdict { allowed: false, reason }) => {
                Decision::Refused(reason.unwrap_or_else(|| "refused without a reason".to_owned()))
            }
            Err(error) => Decision::Unreachable(format!("an unreadable answer: {}", describe_error(&error))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_have_the_contract_shape() {
        let tool =
            Check { tenant: "acme", actor: "agent-7", operation_id: "op-1", subject: Subject::Tool("charge_card") };
        assert_eq!(
            serde_json::to_string(&tool).unwrap(),
            r#"{"tenant":"acme","actor":"agent-7","operation_id":"op-1","tool":"charge_card"}"#
        );
        let destination =
            Check { tenant: "acme", actor: "agent-7", operation_id: "op-1", subject: Subject::Destination("ledger") };
        assert_eq!(
            serde_json::to_string(&destination).unwrap(),
            r#"{"tenant":"acme","actor":"agent-7","operation_id":"op-1","destination":"ledger"}"#
        );
    }
}
