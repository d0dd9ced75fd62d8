//! Executing an operation: attempts (policy, write-ahead, provider), reconciliation of an unknown
//! outcome, and the success recorded with its outbox (CONTRACT.md §4, §5).

use std::time::{Instant, SystemTime};

use anyhow::Result;

use super::{Next, Retry, Shared, log_retry};
use crate::backoff::Task;
use crate::broken::Broken;
use crate::model::{AuditEvent, Effect, ExecutionState, Operation, Recovery};
use crate::policy::Decision;
use crate::provider::{Invocation, Lookup, LookupBy};

/// Provider attempts per operation. After that many, a lookup that still finds no effect fails the
/// operation, and a repeatable tool whose outcome is still unknown is paused.
const MAX_PROVIDER_ATTEMPTS: u32 = 5;

impl Shared {
    /// One new attempt: policy, write-ahead, provider (CONTRACT.md §4, steps 2–7).
    pub(super) async fn attempt(&self, operation: &mut Operation) -> Result<Next> {
        let id = operation.id.clone();
        let attempt = operation.attempts + 1;

        if operation.undecided() && !self.decide(operation).await? {
            return Ok(Next::Stop);
        }
        if self.outrun(operation)? {
            // Restored from a backup: the lost host may have sent an attempt this store forgot.
            return self.outrun_by_restore(operation);
        }
        if !self.may_attempt(operation, attempt).await? {
            return Ok(Next::Stop);
        }

        killpoint_probe::boundary!("before_dispatch", id, attempt);

        let key = match self.broken {
            // BROKEN: a new key per attempt, so the provider cannot recognise a repeat.
            Some(Broken::FreshKey) => format!("{id}#{attempt}"),
            _ => operation.idempotency_key.clone(),
        };
        let Some(invocation) = self.dispatch(operation, attempt, &key).await? else {
            return Ok(Next::Stop);
        };
        operation.execution = ExecutionState::Dispatched;
        operation.attempts = attempt;
        operation.idempotency_key = key;
        let invocation = match invocation {
            // BROKEN: the provider's refusal is taken for "we do not know": looked up (nothing
            // found, since a refusal acts on nothing), then attempted again.
            Invocation::Rejected(reason) if self.broken == Some(Broken::RetryOn4xx) => Invocation::Unknown(reason),
            invocation => invocation,
        };
        self.settle_attempt(operation, attempt, invocation).await
    }

    /// Asks the policy whether `attempt` may be made. When it may not, the refusal or the wait is
    /// recorded here, and nothing is sent.
    async fn may_attempt(&self, operation: &Operation, attempt: u32) -> Result<bool> {
        let id = &operation.id;
        match self.tool_policy(operation).await? {
            Decision::Allowed => Ok(true),
            Decision::Refused(reason) => {
                self.refuse_attempt(operation, attempt, &reason)?;
                Ok(false)
            }
            Decision::Unreachable(why) => {
                // No decision is not permission.
                let delay = self.backoff().failed(Task::Operation(id.clone()), Instant::now());
                eprintln!("{id} attempt {attempt} waits: policy unreachable ({why}); again in {delay:?}");
                Ok(false)
            }
        }
    }

    /// The policy refused `attempt`.
    fn refuse_attempt(&self, operation: &Operation, attempt: u32, reason: &str) -> Result<()> {
        let id = operation.id.clone();
        // The refusal ends the operation; nothing is deleted, and the audit trail keeps
        // everything that happened before it.
        let reason = format!("policy: {reason}");
        if self.broken == Some(Broken::CountRefusedAttempt) {
            // BROKEN: the refused attempt is counted as made; the provider never saw it.
            self.store.set_attempts(&id, attempt)?;
        }
        if operation.execution == ExecutionState::Unknown
            && operation.decided_tool()?.kind.recovery() == Recovery::Repeat
        {
            // The last attempt of a tool without lookup may have taken effect: FAILED
            // could be untrue, so the operation waits for a person instead.
            self.store.pause(&id, &reason)?;
        } else {
            self.store.record_failure(&id, AuditEvent::PolicyRefused, &reason)?;
        }
        eprintln!("{id} attempt {attempt} refused: {reason}");
        killpoint_probe::boundary!("after_policy_revocation", id, attempt);
        Ok(())
    }

    /// Records the dispatch and calls the provider, in that order (but for two broken variants).
    /// `None`: the broken `result-before-call` variant has already recorded the outcome.
    async fn dispatch(&self, operation: &Operation, attempt: u32, key: &str) -> Result<Option<Invocation>> {
        let id = &operation.id;
        let invocation = if self.broken == Some(Broken::NoWriteAhead) {
            // BROKEN: the provider hears of the attempt before the store does. A crash during the
            // call leaves INTENT_RECORDED, and the next incarnation sends it again as new.
            let invocation = self.provider.invoke(operation.decided_tool()?, key, &operation.arguments).await;
            self.store.record_dispatch(id, attempt, key)?;
            eprintln!("{id} attempt {attempt} dispatched");
            invocation
        } else if self.broken == Some(Broken::ResultBeforeCall) {
            // BROKEN: the success and its outbox are written before the provider is called, with
            // a provisional result, and the real result over it once the provider answers. A crash
            // in between leaves a success the provider never saw, and deliveries of a made-up result.
            self.store.record_dispatch(id, attempt, key)?;
            eprintln!("{id} attempt {attempt} dispatched");
            let provisional = Effect { provider_ref: format!("pending:{key}"), result: serde_json::Value::Null };
            self.store.record_success(operation, &provisional, SystemTime::now())?;
            let invocation = self.provider.invoke(operation.decided_tool()?, key, &operation.arguments).await;
            if let Invocation::Succeeded(effect) = &invocation {
                self.store.overwrite_effect(id, effect)?;
                eprintln!("{id} attempt {attempt} succeeded: provider_ref {}", effect.provider_ref);
                return Ok(None);
            }
            invocation
        } else {
            // Write-ahead: DISPATCHED is durable before the provider sees anything. From here on,
            // whatever happens to this process, the next incarnation knows that a request may have
            // been sent and will look it up before it ever sends another.
            self.store.record_dispatch(id, attempt, key)?;
            eprintln!("{id} attempt {attempt} dispatched");
            self.provider.invoke(operation.decided_tool()?, key, &operation.arguments).await
        };
        Ok(Some(invocation))
    }

    /// Records what the provider answered to `attempt`.
    async fn settle_attempt(&self, operation: &mut Operation, attempt: u32, invocation: Invocation) -> Result<Next> {
        let id = operation.id.clone();
        match invocation {
            Invocation::Succeeded(effect) => {
                eprintln!("{id} attempt {attempt} succeeded: provider_ref {}", effect.provider_ref);
                self.succeed(operation, effect).await?;
                Ok(Next::Stop)
            }
            Invocation::Rejected(reason) => {
                self.store.record_failure(&id, AuditEvent::Failed, &reason)?;
                eprintln!("{id} attempt {attempt} rejected by the provider: {reason}");
                Ok(Next::Stop)
            }
            Invocation::Unknown(reason) => {
                // Not a failure, not permission to retry: only a lookup can tell.
                self.store.record_unknown(&id, &format!("attempt {attempt}: {reason}"))?;
                operation.execution = ExecutionState::Unknown;
                eprintln!("{id} attempt {attempt} outcome unknown: {reason}");
                Ok(Next::Reconcile)
            }
        }
    }
    /// An attempt went unanswered: recover by the tool's kind (CONTRACT.md §4 step 9, §5).
    pub(super) async fn reconcile(&self, operation: &mut Operation) -> Result<Next> {
        let id = operation.id.clone();
        if self.broken == Some(Broken::BlindRetry) && operation.attempts < MAX_PROVIDER_ATTEMPTS {
            // BROKEN: "no answer" is taken to mean "did not happen", and the request is sent again.
            return Ok(Next::Attempt);
        }
        match operation.decided_tool()?.kind.recovery() {
            Recovery::LookUp => self.look_up(operation).await,
            Recovery::Pause => {
                // Nothing can say whether the effect happened, and trying again could make it
                // happen twice. That is a person's decision.
                let reason = "paused: outcome unknown and the tool has no lookup; needs an operator";
                self.store.pause(&id, reason)?;
                eprintln!("{id} {reason}");
                Ok(Next::Stop)
            }
            Recovery::Repeat
                if operation.attempts >= MAX_PROVIDER_ATTEMPTS && self.broken == Some(Broken::FailAtBound) =>
            {
                // BROKEN: "no success after so many tries" is taken to mean "nothing happened".
                let reason = format!("no success after {MAX_PROVIDER_ATTEMPTS} attempts");
                self.store.record_failure(&id, AuditEvent::Failed, &reason)?;
                eprintln!("{id} failed: {reason}");
                Ok(Next::Stop)
            }
            Recovery::Repeat if operation.attempts >= MAX_PROVIDER_ATTEMPTS => {
                // Repeating is harmless but has not helped: stop hammering and ask for a person.
                let reason =
                    format!("paused: outcome still unknown after {MAX_PROVIDER_ATTEMPTS} attempts; needs an operator");
                self.store.pause(&id, &reason)?;
                eprintln!("{id} {reason}");
                Ok(Next::Stop)
            }
            Recovery::Repeat => {
                log_retry(
                    Retry::Execution,
                    &id,
                    None,
                    operation.attempts + 1,
                    "outcome unknown; the tool is safely repeatable",
                );
                Ok(Next::Attempt)
            }
        }
    }

    /// Asks the provider whether the last attempt had an effect. A lookup reads what happened; it
    /// executes nothing, so no policy decision is needed for it.
    async fn look_up(&self, operation: &mut Operation) -> Result<Next> {
        let id = operation.id.clone();
        let by = match &operation.provider_ref {
            Some(provider_ref) => LookupBy::ProviderRef(provider_ref),
            None => LookupBy::IdempotencyKey(&operation.idempotency_key),
        };
        let lookup = match self.provider.look_up(operation.decided_tool()?, by).await {
            // BROKEN: a lookup that could not answer is read as "no effect".
            Lookup::Unknown(_) if self.broken == Some(Broken::LookupErrorAsMiss) => Lookup::NotFound,
            lookup => lookup,
        };
        match lookup {
            Lookup::Found(effect) => {
                eprintln!("{id} lookup found the effect: provider_ref {}", effect.provider_ref);
                self.succeed(operation, effect).await?;
                Ok(Next::Stop)
            }
            Lookup::NotFound if operation.attempts >= MAX_PROVIDER_ATTEMPTS => {
                let reason = format!("provider reports no effect after {MAX_PROVIDER_ATTEMPTS} attempts");
                self.store.record_failure(&id, AuditEvent::Failed, &reason)?;
                eprintln!("{id} failed: {reason}");
                Ok(Next::Stop)
            }
            Lookup::NotFound => {
                // The provider says the attempt had no effect: only now is a new attempt safe.
                let detail = format!("attempt {} had no effect", operation.attempts);
                self.store.record_audit(&id, AuditEvent::NotFound, &detail)?;
                eprintln!("{id} lookup: {detail}");
                log_retry(Retry::Execution, &id, None, operation.attempts + 1, &format!("lookup: {detail}"));
                Ok(Next::Attempt)
            }
            Lookup::Unknown(why) => {
                self.store.record_audit(&id, AuditEvent::LookupFailed, &why)?;
                let delay = self.backoff().failed(Task::Operation(id.clone()), Instant::now());
                eprintln!("{id} lookup failed ({why}); again in {delay:?}");
                Ok(Next::Stop)
            }
        }
    }

    /// Records a confirmed success together with its outbox.
    pub(super) async fn succeed(&self, operation: &mut Operation, effect: Effect) -> Result<()> {
        let id = operation.id.clone();
        let attempt = operation.attempts;
        killpoint_probe::boundary!("after_provider_success", id, attempt);

        if self.broken == Some(Broken::SplitOutbox) {
            // BROKEN: success and deliveries in two transactions. A crash between them leaves a
            // success with no delivery, and nothing ever creates one.
            self.store.record_success_without_deliveries(&id, &effect)?;
            killpoint_probe::boundary!("after_result_write", id, attempt);
            self.store.enqueue_deliveries(operation, SystemTime::now())?;
        } else {
            self.store.record_success(operation, &effect, SystemTime::now())?;
            killpoint_probe::boundary!("after_result_write", id, attempt);
        }

        self.backoff().succeeded(&Task::Operation(id));
        operation.execution = ExecutionState::Succeeded;
        operation.provider_ref = Some(effect.provider_ref);
        operation.result = Some(effect.result);
        Ok(())
    }
}
