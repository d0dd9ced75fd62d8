//! The worker: executes operations, reconciles unknown outcomes and delivers results
//! (CONTRACT.md §4–§6, §8), working on many operations at once.
//!
//! One scheduling loop hands out the work and never does any itself. Each operation that needs
//! work gets its own task, and never more than one at a time: the loop keeps the ids of the
//! operations it has a task for, and an operation is not looked at again until its task is over.
//! So within one operation everything happens in order — executing or reconciling it (`UNKNOWN`
//! ones looked up, `INTENT_RECORDED` ones attempted), then its due deliveries one destination after
//! the other, by name — while operations progress side by side. An operation's deliveries share
//! its task rather than getting one each so that one operation's story is always told in the same
//! order: a sequential workload reads exactly as it did when the worker did one thing at a time.
//!
//! The loop wakes when a task ends, something is submitted, a delivery falls due or a backed-off
//! operation may go again; each time it starts tasks for what has become due.
//!
//! What the tasks share is behind locks that are never held across an `.await`: the store (one
//! short transaction per call), the backoff schedule, and the broken `policy-cache` variant's
//! memory. The probe (`killpoint_probe`) serialises announcements itself: a task blocked on it
//! holds up other tasks only at their next announcement, never at the store.
//!
//! The places where a `--broken` variant deviates are marked `BROKEN:`.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::backoff::{Backoff, Task};
use crate::broken::Broken;
use crate::config::Config;
use crate::consumers::{Consumers, Event};
use crate::model::{AuditEvent, Delivery, Effect, ExecutionState, Operation, Recovery};
use crate::policy::{Decision, Policy, Subject};
use crate::provider::{Invocation, Lookup, LookupBy, Provider};
use crate::store::Store;

/// Provider attempts per operation. After that many, a lookup that still finds no effect fails the
/// operation, and a repeatable tool whose outcome is still unknown is paused.
const MAX_PROVIDER_ATTEMPTS: u32 = 5;

/// What to do next with the operation in hand.
#[derive(Clone, Copy)]
enum Next {
    /// Ask the policy, then the provider.
    Attempt,
    /// The last attempt went unanswered: find out what happened.
    Reconcile,
    /// Nothing more for now: settled, paused, or waiting for a service to answer.
    Stop,
}

/// What one task does for its operation.
enum Work {
    /// Take the operation as far as it can go now, starting with `Next`.
    Execute(Operation, Next),
    /// Send these deliveries of the operation, in this order.
    Deliver(Vec<Delivery>),
}

pub struct Worker {
    shared: Arc<Shared>,
    /// Notified by the API on every new submission.
    wake: Arc<Notify>,
    /// The running tasks; each yields its operation's id when it ends.
    tasks: JoinSet<(String, Result<()>)>,
    /// The operations that have a task: at most one each.
    in_flight: HashSet<String>,
}

/// Everything a task works with.
struct Shared {
    store: Arc<Store>,
    provider: Provider,
    consumers: Consumers,
    policy: Policy,
    backoff: Mutex<Backoff>,
    delivery_max_attempts: u32,
    retry_base: Duration,
    broken: Option<Broken>,
    /// Only for the broken `policy-cache` variant: the answers it wrongly reuses.
    policy_cache: Mutex<HashSet<(String, String)>>,
}

impl Worker {
    pub fn new(config: &Config, store: Arc<Store>, wake: Arc<Notify>, broken: Option<Broken>) -> Worker {
        let incarnation = match broken {
            // BROKEN: no fencing token on any request: the world cannot refuse an outlived
            // incarnation, and cannot tell it from the current one.
            Some(Broken::NoFenceHeader) => None,
            _ => Some(config.incarnation),
        };
        let http = crate::http::client(incarnation);
        let shared = Shared {
            store,
            provider: Provider::new(http.clone(), config.provider_url.clone()).with_broken(broken),
            consumers: Consumers::new(http.clone(), config.consumers_url.clone()),
            policy: Policy::new(http, config.policy_url.clone()).with_broken(broken),
            backoff: Mutex::default(),
            delivery_max_attempts: config.delivery_max_attempts,
            retry_base: config.retry_base,
            broken,
            policy_cache: Mutex::default(),
        };
        Worker { shared: Arc::new(shared), wake, tasks: JoinSet::new(), in_flight: HashSet::new() }
    }

    /// Runs for the life of the process. Returns only on a store error (or a task's panic):
    /// without its store the runtime cannot know what it has done, so it stops, and the next
    /// incarnation recovers from what was committed.
    pub async fn run(mut self) -> Result<Infallible> {
        loop {
            let wake_at = self.start_due_work()?;
            let sleep = async {
                match wake_at {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                Some(ended) = self.tasks.join_next() => {
                    let (id, worked) = ended.context("a worker task panicked")?;
                    self.in_flight.remove(&id);
                    worked.with_context(|| format!("working on {id}"))?;
                }
                () = self.wake.notified() => {}
                () = sleep => {}
            }
        }
    }

    /// Starts a task for every operation that has work due and no task yet: `UNKNOWN` ones first,
    /// then `INTENT_RECORDED` ones, then due deliveries, each oldest operation first. Returns when
    /// the loop must look again if nothing else wakes it: the next delivery or backoff that falls
    /// due for an operation without a task (one with a task is looked at again when it ends).
    fn start_due_work(&mut self) -> Result<Option<Instant>> {
        let store = Arc::clone(&self.shared.store);
        let now = SystemTime::now();
        for (state, next) in
            [(ExecutionState::Unknown, Next::Reconcile), (ExecutionState::IntentRecorded, Next::Attempt)]
        {
            for operation in store.operations_to_work(state)? {
                if !self.in_flight.contains(&operation.id) && !self.shared.is_waiting(&operation) {
                    self.start(Work::Execute(operation, next));
                }
            }
        }
        let mut due = store.due_deliveries(now)?.into_iter().peekable();
        while let Some(first) = due.next() {
            let mut deliveries = vec![first];
            while let Some(next) = due.next_if(|d| d.operation_id == deliveries[0].operation_id) {
                deliveries.push(next);
            }
            if !self.in_flight.contains(&deliveries[0].operation_id) {
                self.start(Work::Deliver(deliveries));
            }
        }

        let next_delivery = store
            .delivery_schedule()?
            .into_iter()
            .filter(|(id, _)| !self.in_flight.contains(id))
            .map(|(_, at)| Instant::now() + at.duration_since(SystemTime::now()).unwrap_or_default())
            .min();
        let next_retry = self.shared.backoff().next_wake(Instant::now());
        Ok([next_delivery, next_retry].into_iter().flatten().min())
    }

    fn start(&mut self, work: Work) {
        let id = match &work {
            Work::Execute(operation, _) => operation.id.clone(),
            Work::Deliver(deliveries) => deliveries[0].operation_id.clone(),
        };
        self.in_flight.insert(id.clone());
        let shared = Arc::clone(&self.shared);
        self.tasks.spawn(async move { (id, shared.work(work).await) });
    }
}

impl Shared {
    fn backoff(&self) -> MutexGuard<'_, Backoff> {
        // Every change to the schedule is one call that cannot leave it half-changed.
        self.backoff.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn is_waiting(&self, operation: &Operation) -> bool {
        self.backoff().is_waiting(&Task::Operation(operation.id.clone()), Instant::now())
    }

    async fn work(&self, work: Work) -> Result<()> {
        killpoint_probe::quiet();
        match work {
            Work::Execute(operation, first) => self.drive(operation, first).await,
            Work::Deliver(deliveries) => {
                for delivery in deliveries {
                    self.deliver(delivery).await?;
                }
                Ok(())
            }
        }
    }

    /// Takes one operation as far as it can go now.
    async fn drive(&self, mut operation: Operation, first: Next) -> Result<()> {
        let mut next = first;
        loop {
            next = match next {
                Next::Attempt => self.attempt(&mut operation).await?,
                Next::Reconcile => self.reconcile(&mut operation).await?,
                Next::Stop => return Ok(()),
            };
        }
    }

    // ---- execution ------------------------------------------------------------------------

    /// One new attempt: policy, write-ahead, provider (CONTRACT.md §4, steps 2–7).
    async fn attempt(&self, operation: &mut Operation) -> Result<Next> {
        let id = operation.id.clone();
        let attempt = operation.attempts + 1;

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
        if operation.execution == ExecutionState::Unknown && operation.tool.kind.recovery() == Recovery::Repeat {
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
            let invocation = self.provider.invoke(&operation.tool, key, &operation.arguments).await;
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
            let invocation = self.provider.invoke(&operation.tool, key, &operation.arguments).await;
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
            self.provider.invoke(&operation.tool, key, &operation.arguments).await
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

    /// May this operation's tool be called now? Asked before every new attempt, including those
    /// that follow a reconciliation: permission given earlier may have been revoked since.
    async fn tool_policy(&self, operation: &Operation) -> Result<Decision> {
        if self.broken == Some(Broken::NoPolicyRecheck)
            && self.store.has_audit_event(&operation.id, AuditEvent::PolicyAllowed)?
        {
            // BROKEN: an approval on record is taken as still valid; a revocation since is missed.
            return Ok(Decision::Allowed);
        }
        let decision = self.ask_policy(operation, Subject::Tool(&operation.tool.name)).await;
        if decision == Decision::Allowed {
            self.backoff().succeeded(&Task::Operation(operation.id.clone()));
            self.store.record_audit(
                &operation.id,
                AuditEvent::PolicyAllowed,
                &format!("tool {} for {}/{}", operation.tool.name, operation.tenant, operation.actor),
            )?;
        }
        Ok(decision)
    }

    /// One question to the policy service, asked afresh every time: an answer is about *now*, and
    /// a permission can be withdrawn between two attempts or two sends without any crash.
    async fn ask_policy(&self, operation: &Operation, subject: Subject<'_>) -> Decision {
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

    /// An attempt went unanswered: recover by the tool's kind (CONTRACT.md §4 step 9, §5).
    async fn reconcile(&self, operation: &mut Operation) -> Result<Next> {
        let id = operation.id.clone();
        if self.broken == Some(Broken::BlindRetry) && operation.attempts < MAX_PROVIDER_ATTEMPTS {
            // BROKEN: "no answer" is taken to mean "did not happen", and the request is sent again.
            return Ok(Next::Attempt);
        }
        match operation.tool.kind.recovery() {
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
        let lookup = match self.provider.look_up(&operation.tool, by).await {
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
    async fn succeed(&self, operation: &mut Operation, effect: Effect) -> Result<()> {
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

    // ---- delivery -------------------------------------------------------------------------

    /// One send of one delivery (CONTRACT.md §6). Never calls the tool: the result was recorded
    /// with the success, and a delivery only carries it.
    async fn deliver(&self, delivery: Delivery) -> Result<()> {
        let (operation, mut provider_ref, mut result) = self.recorded_result(&delivery)?;
        if !self.may_deliver(&delivery, &operation).await? {
            return Ok(());
        }

        if self.broken == Some(Broken::RerunOnDelivery) && delivery.attempts > 0 {
            // BROKEN: the tool is executed again "to refresh the result" before a resend: a second
            // side effect for every delivery retry.
            if let Invocation::Succeeded(effect) =
                self.provider.invoke(&operation.tool, &operation.idempotency_key, &operation.arguments).await
            {
                provider_ref = effect.provider_ref;
                result = effect.result;
            }
        }

        self.send(&delivery, &provider_ref, &result).await
    }

    /// The delivery's operation, and the reference and result its success recorded.
    fn recorded_result(&self, delivery: &Delivery) -> Result<(Operation, String, serde_json::Value)> {
        let id = &delivery.operation_id;
        let destination = &delivery.destination;
        let operation =
            self.store.operation(id)?.with_context(|| format!("delivery of {id} to {destination} has no operation"))?;
        let (Some(provider_ref), Some(result)) = (operation.provider_ref.clone(), operation.result.clone()) else {
            anyhow::bail!("delivery of {id} to {destination} exists but the result is not recorded");
        };
        Ok((operation, provider_ref, result))
    }

    /// Asks the policy whether the result may go to the delivery's destination. When it may not,
    /// the dead letter or the wait is recorded here, and nothing is sent.
    async fn may_deliver(&self, delivery: &Delivery, operation: &Operation) -> Result<bool> {
        let id = &delivery.operation_id;
        let destination = &delivery.destination;
        let task = Task::Delivery { operation_id: id.clone(), destination: destination.clone() };
        match self.ask_policy(operation, Subject::Destination(destination)).await {
            Decision::Allowed => self.backoff().succeeded(&task),
            // BROKEN: deliver-refused — the refusal is taken to concern new executions only; the
            // result already obtained is delivered to the revoked destination all the same.
            Decision::Refused(reason) if self.broken == Some(Broken::DeliverRefused) => {
                eprintln!("{id} -> {destination} refused by policy ({reason}); delivering the result anyway");
            }
            Decision::Refused(reason) => {
                let reason = format!("policy: {reason}");
                self.store.dead_letter(delivery, &reason)?;
                eprintln!("{id} -> {destination} dead-lettered: {reason}");
                return Ok(false);
            }
            Decision::Unreachable(why) => {
                let delay = self.backoff().failed(task, Instant::now());
                self.store.postpone_delivery(delivery, SystemTime::now() + delay)?;
                eprintln!("{id} -> {destination} waits: policy unreachable ({why}); again in {delay:?}");
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records the send, sends, and records the consumer's answer.
    async fn send(&self, delivery: &Delivery, provider_ref: &str, result: &serde_json::Value) -> Result<()> {
        let id = &delivery.operation_id;
        let destination = &delivery.destination;
        let send = delivery.attempts + 1;
        if send > 1 {
            let reason = delivery.last_error.as_deref().unwrap_or("the previous send's answer was never recorded");
            log_retry(Retry::Delivery, id, Some(destination), send, reason);
        }
        let key = match self.broken {
            // BROKEN: a new key per send, so the consumer cannot recognise a resend.
            Some(Broken::FreshDeliveryKey) => format!("{id}#{send}"),
            _ => delivery.idempotency_key.clone(),
        };
        // SENT is durable before the send: if this process dies before it learns the answer, the
        // next incarnation sends again with the same key and the consumer deduplicates.
        self.store.record_delivery_sent(delivery, send, &key)?;
        let event = Event { operation_id: id, destination, provider_ref, result };
        let give_up_after = self.give_up_after();
        match self.consumers.send(&key, &event).await {
            Ok(()) => {
                killpoint_probe::boundary!("after_delivery_send", id, send, destination);
                self.store.record_delivery_acked(delivery)?;
                eprintln!("{id} -> {destination} send {send} acked");
            }
            Err(error) if send >= give_up_after => {
                let reason = format!("{error} (send {send} of {})", self.delivery_max_attempts);
                self.store.dead_letter(delivery, &reason)?;
                eprintln!("{id} -> {destination} dead-lettered: {reason}");
            }
            Err(error) => {
                let delay = match self.broken {
                    // BROKEN: the consumer is asked again at once, however often it failed.
                    Some(Broken::NoBackoff) => Duration::ZERO,
                    _ => delivery_retry_delay(self.retry_base, send),
                };
                self.store.schedule_delivery_retry(delivery, SystemTime::now() + delay, &error)?;
                eprintln!("{id} -> {destination} send {send} failed: {error}; again in {delay:?}");
            }
        }
        Ok(())
    }

    /// The send after which a failing delivery is dead-lettered.
    fn give_up_after(&self) -> u32 {
        match self.broken {
            // BROKEN: the delivery is given up one send too early.
            Some(Broken::DeadLetterEarly) => self.delivery_max_attempts.saturating_sub(1),
            _ => self.delivery_max_attempts,
        }
    }
}

/// What a retry repeats: the tool's execution (a new provider attempt) or only the delivery of a
/// result already recorded (a resend to one destination). The seed asks that logs prove which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Retry {
    Execution,
    Delivery,
}

/// One structured line on stderr per retry, e.g.
/// `{"log":"retry","retry":"delivery","operation_id":"charge","destination":"ledger","attempt":2,"reason":"…"}`.
/// `attempt` is the provider attempt (execution) or the send (delivery) about to be made.
fn log_retry(retry: Retry, operation_id: &str, destination: Option<&str>, attempt: u32, reason: &str) {
    #[derive(Serialize)]
    struct Line<'a> {
        log: &'static str,
        retry: Retry,
        operation_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        destination: Option<&'a str>,
        attempt: u32,
        reason: &'a str,
    }
    let line = Line { log: "retry", retry, operation_id, destination, attempt, reason };
    if let Ok(json) = serde_json::to_string(&line) {
        eprintln!("{json}");
    }
}

/// `base × 2^(n−1)` after the n-th failed send (CONTRACT.md §6).
fn delivery_retry_delay(base: Duration, failed_sends: u32) -> Duration {
    // Capped exponent: the multiplication cannot overflow, and nobody waits for 2^40 × base.
    base.saturating_mul(1 << failed_sends.saturating_sub(1).min(20))
}

/// Run once at start, before the API serves anything, so that nobody ever reads an operation as
/// `DISPATCHED` that no living process is dispatching.
pub fn recover(store: &Store, broken: Option<Broken>) -> Result<()> {
    if broken == Some(Broken::OneDispatchSlot) {
        // BROKEN: one "operation in flight" slot, the last one dispatched, instead of every
        // operation's own DISPATCHED: any other request in flight is forgotten and sent again.
        let slot = store.last_dispatched()?;
        for operation in store.operations_to_work(ExecutionState::Dispatched)? {
            if slot.as_ref() != Some(&operation.id) {
                store.take_for_never_dispatched(&operation.id, "not in the dispatch slot: never dispatched")?;
            }
        }
    }
    let recovered = store.recover_interrupted(SystemTime::now())?;
    if broken == Some(Broken::RestartAfterFailedLookup) {
        // BROKEN: an operation whose last lookup could not answer is taken for one whose attempt
        // never reached the provider, and is attempted as new.
        for operation in store.operations_to_work(ExecutionState::Unknown)? {
            let last = store.snapshot(&operation.id)?.and_then(|snapshot| snapshot.audit.last().cloned());
            if last.is_some_and(|entry| entry.event == AuditEvent::LookupFailed.as_str()) {
                store.take_for_never_dispatched(&operation.id, "last lookup failed: taken for never dispatched")?;
            }
        }
    }
    for id in &recovered.unknown {
        eprintln!("{id} was DISPATCHED when the last incarnation stopped: now UNKNOWN");
    }
    for (id, destination) in &recovered.resend {
        eprintln!("{id} -> {destination} was SENT when the last incarnation stopped: sending again");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_retries_double_from_the_base() {
        let base = Duration::from_millis(25);
        assert_eq!(delivery_retry_delay(base, 1), Duration::from_millis(25));
        assert_eq!(delivery_retry_delay(base, 2), Duration::from_millis(50));
        assert_eq!(delivery_retry_delay(base, 4), Duration::from_millis(200));
        assert!(delivery_retry_delay(base, u32::MAX) > Duration::from_secs(60));
    }
}
