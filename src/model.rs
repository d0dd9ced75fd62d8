//! The runtime's domain: the two state machines of an operation (execution and delivery), the
//! kinds of tool and how each recovers from an unknown outcome, and the audit events.
//!
//! Every state is an enum. Their spellings on the wire and in the database are the contract's
//! (`SUCCEEDED`, `non_idempotent_with_lookup`, …) and live only here: `as_str` for writing,
//! `from_name` for reading back, serde for JSON. A test checks the two spellings agree.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How far the tool call itself got. Tracked separately from delivery: a call that succeeded is
/// never repeated because a consumer did not hear about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExecutionState {
    /// Accepted and durable; the provider has not been asked yet.
    IntentRecorded,
    /// An attempt is (or was) on its way to the provider; its outcome is not known yet.
    Dispatched,
    /// The provider confirmed the effect, by answering or by a lookup.
    Succeeded,
    /// The provider refused the request, the policy refused the operation, or the provider
    /// confirmed that repeated attempts had no effect.
    Failed,
    /// An attempt was sent and no answer came back. Not a failure, and not permission to retry:
    /// it must be reconciled with the provider first.
    Unknown,
}

impl ExecutionState {
    pub const ALL: [ExecutionState; 5] =
        [Self::IntentRecorded, Self::Dispatched, Self::Succeeded, Self::Failed, Self::Unknown];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::IntentRecorded => "INTENT_RECORDED",
            Self::Dispatched => "DISPATCHED",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
            Self::Unknown => "UNKNOWN",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name)
    }
}

/// How far the result got towards one destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeliveryState {
    /// Waiting for its (next) send.
    Pending,
    /// A send is in flight. Written before the send, so a restart knows to send again.
    Sent,
    /// The consumer acknowledged receipt (not that it acted).
    Acked,
    /// Given up: too many failed sends, or the policy forbids the destination.
    DeadLettered,
}

impl DeliveryState {
    pub const ALL: [DeliveryState; 4] = [Self::Pending, Self::Sent, Self::Acked, Self::DeadLettered];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Sent => "SENT",
            Self::Acked => "ACKED",
            Self::DeadLettered => "DEAD_LETTERED",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|state| state.as_str() == name)
    }
}

/// What the provider does with a repeated request, and whether it can say what already happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// The same key replays the first answer; no new effect.
    IdempotentByKey,
    /// Every request is a new effect, whatever the key; effects can be looked up.
    NonIdempotentWithLookup,
    /// Every request is a new effect, and nothing can be looked up.
    NonIdempotentNoLookup,
    /// Repeating is harmless (a PUT); nothing can be looked up.
    SafelyRepeatable,
}

/// What to do with an operation whose last attempt went unanswered (CONTRACT.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Ask the provider whether the effect happened; attempt again only if it did not.
    LookUp,
    /// Nothing can tell whether the effect happened and repeating could double it: stop and wait
    /// for a person.
    Pause,
    /// Repeating is harmless: attempt again.
    Repeat,
}

impl ToolKind {
    pub const ALL: [ToolKind; 4] =
        [Self::IdempotentByKey, Self::NonIdempotentWithLookup, Self::NonIdempotentNoLookup, Self::SafelyRepeatable];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::IdempotentByKey => "idempotent_by_key",
            Self::NonIdempotentWithLookup => "non_idempotent_with_lookup",
            Self::NonIdempotentNoLookup => "non_idempotent_no_lookup",
            Self::SafelyRepeatable => "safely_repeatable",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The recovery rule for an unanswered attempt. Only the kinds whose provider answers
    /// `GET …/effects` can be looked up.
    pub fn recovery(self) -> Recovery {
        match self {
            Self::IdempotentByKey | Self::NonIdempotentWithLookup => Recovery::LookUp,
            Self::NonIdempotentNoLookup => Recovery::Pause,
            Self::SafelyRepeatable => Recovery::Repeat,
        }
    }
}

/// The tool an operation calls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub kind: ToolKind,
}

/// A task for the model (CONTRACT.md section 12): the prompt it is asked, unchanged, and the
/// tools it may choose from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub prompt: String,
    pub tools: Vec<Tool>,
}

/// The model's decision for a task: the tool call the runtime acts on, in every attempt and every
/// incarnation, once it is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The model's tool-call id.
    pub id: String,
    pub tool: Tool,
    /// The model's arguments, passed to the provider unchanged (CONTRACT.md §12-2).
    pub arguments: Value,
}

/// `POST /operations` as the harness sends it. Field order is the contract's, so the canonical
/// form used for the request hash reads like the request. Exactly one of a tool call (`tool` and
/// `arguments`) and a `task` ([`Submission::work`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    pub operation_id: String,
    pub tenant: String,
    pub actor: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Tool>,
    /// Passed to the provider unchanged: the harness plants the operation's identity in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    #[serde(default)]
    pub destinations: Vec<String>,
}

/// What a submission asks for.
pub enum Work<'a> {
    /// A fixed tool call.
    Call { tool: &'a Tool, arguments: &'a serde_json::Map<String, Value> },
    /// A task the model decides.
    Task(&'a Task),
}

impl Submission {
    /// The tool call or the task, or what is wrong with the body's mix of them.
    pub fn work(&self) -> Result<Work<'_>, String> {
        match (&self.tool, &self.arguments, &self.task) {
            (Some(tool), Some(arguments), None) => Ok(Work::Call { tool, arguments }),
            (None, None, Some(task)) => Ok(Work::Task(task)),
            _ => Err("expected either `tool` and `arguments` (a tool call) or `task` (CONTRACT.md section 12), not both, not a part".to_owned()),
        }
    }

    /// The key the provider sees on every attempt of this operation. The reference runtime uses the
    /// operation id itself: the caller chose it, it is durable from the first write, and it is the
    /// same in every incarnation, so no attempt can ever carry a different one.
    pub fn idempotency_key(&self) -> &str {
        &self.operation_id
    }
}

/// One operation as the store holds it.
#[derive(Debug, Clone)]
pub struct Operation {
    pub id: String,
    pub tenant: String,
    pub actor: String,
    /// The tool called; for a task, the tool of its decision (`None` until the model decided).
    pub tool: Option<Tool>,
    /// The arguments passed to the provider: the submitted ones, or the decision's.
    pub arguments: Value,
    /// For a task: what the model is asked.
    pub task: Option<Task>,
    /// For a task: the model's decision, once recorded (its tool-call id).
    pub decision: Option<String>,
    pub destinations: Vec<String>,
    pub execution: ExecutionState,
    /// Set when the runtime has stopped working on the operation and waits for a person.
    pub paused: bool,
    /// Provider attempts made so far, across incarnations.
    pub attempts: u32,
    /// The key the provider saw (or will see) for this operation.
    pub idempotency_key: String,
    pub provider_ref: Option<String>,
    pub result: Option<Value>,
    pub failure_reason: Option<String>,
    /// Whether a restore may have outrun this operation (CONTRACT.md section 13).
    pub outrun: Outrun,
}

/// Whether the lost host may have attempted an operation the restored store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outrun {
    No,
    /// It was in the backup, not yet attempted: the lost host may have attempted it since.
    InBackup,
    /// Accepted after the restore: perhaps a client's retry of one the backup forgot, perhaps
    /// new. A kind with no lookup cannot tell, and goes ahead (CONTRACT.md section 13, "What cannot be owed").
    Resubmitted,
}

impl Outrun {
    pub fn column(self) -> u8 {
        match self {
            Outrun::No => 0,
            Outrun::InBackup => 1,
            Outrun::Resubmitted => 2,
        }
    }

    pub fn of_column(value: u8) -> Outrun {
        match value {
            1 => Outrun::InBackup,
            2 => Outrun::Resubmitted,
            _ => Outrun::No,
        }
    }
}

impl Operation {
    /// The tool to call. Only a task the model has not decided has none; the worker decides a
    /// task before it attempts, reconciles or delivers anything of it.
    pub fn decided_tool(&self) -> anyhow::Result<&Tool> {
        self.tool.as_ref().ok_or_else(|| anyhow::anyhow!("the task {} has no recorded decision yet", self.id))
    }

    /// A task whose decision is not recorded yet.
    pub fn undecided(&self) -> bool {
        self.task.is_some() && self.decision.is_none()
    }

    /// The key every send of this operation's result carries, to every destination. Each consumer
    /// deduplicates by key on its own, so one key per operation is enough, and it is the same id an
    /// operator greps for in the provider's and the consumers' logs.
    pub fn delivery_key(&self) -> &str {
        &self.id
    }
}

/// What the provider reports about an effect that happened, from its answer or from a lookup.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Effect {
    pub provider_ref: String,
    pub result: Value,
}

/// One destination's delivery of an operation's result.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub operation_id: String,
    pub destination: String,
    pub state: DeliveryState,
    /// Sends made so far, across incarnations.
    pub attempts: u32,
    pub idempotency_key: String,
    pub last_error: Option<String>,
}

/// Entries of an operation's audit trail. The names are the runtime's own (CONTRACT.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditEvent {
    IntentRecorded,
    /// The model's decision for a task was recorded, before anything acted on it.
    Decided,
    /// The model could not be asked, or its answer could not be read: asked again later.
    ModelFailed,
    /// The policy service allowed a new attempt of the tool.
    PolicyAllowed,
    /// The policy service refused a new attempt; the operation failed.
    PolicyRefused,
    Dispatched,
    Succeeded,
    Failed,
    Unknown,
    /// A lookup found no effect for the last attempt.
    NotFound,
    /// A lookup could not answer (an error, a dropped connection, an unreadable body): nothing is
    /// known, and the operation is looked up again later.
    LookupFailed,
    Paused,
    /// A delivery send is about to go out.
    DeliverySent,
    DeliveryAcked,
    DeliveryRetry,
    DeliveryDeadLettered,
    /// The incarnation started on a restored backup, and the operation may have been attempted
    /// after it: looked up before anything is sent.
    Restored,
}

impl AuditEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IntentRecorded => "intent_recorded",
            Self::Decided => "decided",
            Self::ModelFailed => "model_failed",
            Self::PolicyAllowed => "policy_allowed",
            Self::PolicyRefused => "policy_refused",
            Self::Dispatched => "dispatched",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
            Self::NotFound => "not_found",
            Self::LookupFailed => "lookup_failed",
            Self::Paused => "paused",
            Self::DeliverySent => "delivery_sent",
            Self::DeliveryAcked => "delivery_acked",
            Self::DeliveryRetry => "delivery_retry",
            Self::DeliveryDeadLettered => "delivery_dead_lettered",
            Self::Restored => "restored",
        }
    }
}

/// One audit entry as read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditEntry {
    pub event: String,
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `as_str` (database) and serde (JSON) must spell every state the same way.
    fn serde_name<T: Serialize>(value: T) -> String {
        serde_json::to_value(value).unwrap().as_str().unwrap().to_owned()
    }

    #[test]
    fn database_and_json_spellings_agree() {
        for state in ExecutionState::ALL {
            assert_eq!(serde_name(state), state.as_str());
            assert_eq!(ExecutionState::from_name(state.as_str()), Some(state));
        }
        for state in DeliveryState::ALL {
            assert_eq!(serde_name(state), state.as_str());
            assert_eq!(DeliveryState::from_name(state.as_str()), Some(state));
        }
        for kind in ToolKind::ALL {
            assert_eq!(serde_name(kind), kind.as_str());
            assert_eq!(ToolKind::from_name(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn recovery_follows_the_contract_table() {
        assert_eq!(ToolKind::IdempotentByKey.recovery(), Recovery::LookUp);
        assert_eq!(ToolKind::NonIdempotentWithLookup.recovery(), Recovery::LookUp);
        assert_eq!(ToolKind::NonIdempotentNoLookup.recovery(), Recovery::Pause);
        assert_eq!(ToolKind::SafelyRepeatable.recovery(), Recovery::Repeat);
    }
}
