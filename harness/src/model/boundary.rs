//! The boundaries: the named instants at which killpoint kills a runtime.
//!
//! This is the one list. Each name is a row of the seed article's failure table; the contract
//! (`CONTRACT.md`, section 7) says exactly where in the flow each sits and who announces it.

use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A named instant in the flow of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// The runtime has answered `202` to an operation's first submission: the intent must be
    /// durable. Recovery: the operation is still known (and settles) after the restart.
    AfterSubmit,
    /// Intent durable, policy allowed the attempt, `DISPATCHED` not yet written, provider not
    /// called. Recovery: no provider call happened; execute once.
    BeforeDispatch,
    /// The provider received the attempt (and, per the fault, applied it); its answer is held.
    /// Recovery: `UNKNOWN` → reconcile by lookup; never blind-retry.
    AfterDispatch,
    /// A `2xx` (or a lookup that found the effect) is in the runtime's memory, nothing written.
    /// Recovery: recover the provider's result; mark success; do not execute again.
    AfterProviderSuccess,
    /// Success and the outbox are committed; nothing delivered yet.
    /// Recovery: the outbox still yields every delivery.
    AfterResultWrite,
    /// A consumer answered `2xx`; the `ACKED` state is not written.
    /// Recovery: replay with the same key; the consumer deduplicates.
    AfterDeliverySend,
    /// The policy service refused a new attempt and the refusal is committed.
    /// Recovery: refuse new execution; keep the audit trail.
    AfterPolicyRevocation,
}

/// Who sees a boundary happen, and so who can stop the runtime exactly there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Site {
    /// The runtime announces it on the probe and blocks until told to resume.
    Probe,
    /// The fake provider sees it from outside and holds its answer.
    Provider,
    /// The harness itself, as the runtime's client: it kills the instant an answer arrives, so
    /// the point is exact with and without the probe.
    Client,
}

impl Boundary {
    pub const ALL: [Boundary; 7] = [
        Boundary::AfterSubmit,
        Boundary::BeforeDispatch,
        Boundary::AfterDispatch,
        Boundary::AfterProviderSuccess,
        Boundary::AfterResultWrite,
        Boundary::AfterDeliverySend,
        Boundary::AfterPolicyRevocation,
    ];

    /// The boundaries `killpoint-tracer` reaches at a system call, without the probe (CONTRACT.md
    /// section 7, "Boundaries at system calls"); the others are reached from outside exactly.
    pub const AT_SYSCALL: [Boundary; 4] = [
        Boundary::BeforeDispatch,
        Boundary::AfterProviderSuccess,
        Boundary::AfterResultWrite,
        Boundary::AfterPolicyRevocation,
    ];

    pub fn at_syscall(self) -> bool {
        Boundary::AT_SYSCALL.contains(&self)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::AfterSubmit => "after_submit",
            Boundary::BeforeDispatch => "before_dispatch",
            Boundary::AfterDispatch => "after_dispatch",
            Boundary::AfterProviderSuccess => "after_provider_success",
            Boundary::AfterResultWrite => "after_result_write",
            Boundary::AfterDeliverySend => "after_delivery_send",
            Boundary::AfterPolicyRevocation => "after_policy_revocation",
        }
    }

    /// Where the boundary sits (CONTRACT.md section 7), in one line (`killpoint list boundaries`).
    pub fn summary(self) -> &'static str {
        match self {
            Boundary::AfterSubmit => {
                "the runtime answered 202 to the operation's first submission (intent must be durable)"
            }
            Boundary::BeforeDispatch => "intent durable, attempt allowed, not yet DISPATCHED, provider not called",
            Boundary::AfterDispatch => "provider received the attempt (applied it if `effect`), answer held",
            Boundary::AfterProviderSuccess => "runtime has the provider's success in memory only",
            Boundary::AfterResultWrite => "success and outbox committed, nothing delivered",
            Boundary::AfterDeliverySend => "consumer answered 2xx, ACK not written",
            Boundary::AfterPolicyRevocation => "refusal by policy committed",
        }
    }

    pub fn site(self) -> Site {
        match self {
            Boundary::AfterSubmit => Site::Client,
            Boundary::AfterDispatch => Site::Provider,
            _ => Site::Probe,
        }
    }

    /// Delivery boundaries concern one destination of an operation.
    pub fn is_delivery(self) -> bool {
        matches!(self, Boundary::AfterDeliverySend)
    }

    /// Parses a boundary name; an unknown one gets the closest valid name as a suggestion.
    pub fn from_name(name: &str) -> Result<Boundary, String> {
        Boundary::ALL.into_iter().find(|b| b.as_str() == name).ok_or_else(|| {
            let names: Vec<&str> = Boundary::ALL.iter().map(|b| b.as_str()).collect();
            unknown_word("boundary", name, &names)
        })
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Boundary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Boundary::from_name(&name).map_err(serde::de::Error::custom)
    }
}

/// "unknown boundary `after_dispach`; did you mean `after_dispatch`? (expected one of …)"
pub(crate) fn unknown_word(what: &str, found: &str, valid: &[&str]) -> String {
    let closest = valid.iter().map(|v| (edit_distance(found, v), *v)).min().filter(|(d, v)| *d <= v.len() / 3 + 1);
    let list = valid.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ");
    match closest {
        Some((_, v)) => format!("unknown {what} `{found}`; did you mean `{v}`? (expected one of {list})"),
        None => format!("unknown {what} `{found}` (expected one of {list})"),
    }
}

/// Levenshtein distance; the lists it compares against are a handful of short words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Boundary::ALL {
            assert_eq!(Boundary::from_name(b.as_str()), Ok(b));
        }
    }

    #[test]
    fn unknown_name_suggests_the_closest() {
        let err = Boundary::from_name("after_dispach").unwrap_err();
        assert!(err.contains("did you mean `after_dispatch`"), "{err}");
        let err = Boundary::from_name("zzz").unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
    }
}
