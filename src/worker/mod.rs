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
//!
//! The files, each adding its own `impl Shared` block:
//!
//! - `mod.rs`: the scheduling loop, what a task is, and recovery at start.
//! - `decision.rs`: asking the model to decide a task, and recording its decision first.
//! - `execution.rs`: attempts, reconciliation of unknown outcomes, and the recorded success.
//! - `permission.rs`: asking the policy service, before an attempt and before a send.
//! - `restored.rs`: an operation a restore may have outrun, looked up before its first attempt.
//! - `delivery.rs`: sending recorded results to their destinations.

mod decision;
mod delivery;
mod execution;
mod permission;
mod restored;

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
use crate::consumers::Consumers;
use crate::model::{AuditEvent, Delivery, ExecutionState, Operation};
use crate::model_client::ModelClient;
use crate::policy::Policy;
use crate::provider::Provider;
use crate::store::Store;

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
    Execute(Box<Operation>, Next),
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
    /// `None` without `KILLPOINT_MODEL_URL`: a task then cannot be decided, and waits.
    model: Option<ModelClient>,
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
            policy: Policy::new(http.clone(), config.policy_url.clone()).with_broken(broken),
            model: config.model_url.clone().map(|url| ModelClient::new(http, url)),
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
                    self.start(Work::Execute(Box::new(operation), next));
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
            Work::Execute(operation, first) => self.drive(*operation, first).await,
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
    if broken == Some(Broken::ReaskOnRecovery) {
        // BROKEN: the agent loop runs again from the top: every unfinished task forgets the
        // decision it recorded and asks the model again, which answers otherwise.
        for state in [ExecutionState::IntentRecorded, ExecutionState::Unknown] {
            for operation in store.operations_to_work(state)?.iter().filter(|op| op.decision.is_some()) {
                store.forget_decision(&operation.id)?;
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
