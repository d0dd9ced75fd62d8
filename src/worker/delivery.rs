//! Delivering a recorded result to one destination (CONTRACT.md §6).

use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use super::{Retry, Shared, log_retry};
use crate::backoff::Task;
use crate::broken::Broken;
use crate::consumers::Event;
use crate::model::{Delivery, Operation};
use crate::policy::{Decision, Subject};
use crate::provider::Invocation;

impl Shared {
    /// One send of one delivery (CONTRACT.md §6). Never calls the tool: the result was recorded
    /// with the success, and a delivery only carries it.
    pub(super) async fn deliver(&self, delivery: Delivery) -> Result<()> {
        let (operation, mut provider_ref, mut result) = self.recorded_result(&delivery)?;
        if !self.may_deliver(&delivery, &operation).await? {
            return Ok(());
        }

        if self.broken == Some(Broken::RerunOnDelivery) && delivery.attempts > 0 {
            // BROKEN: the tool is executed again "to refresh the result" before a resend: a second
            // side effect for every delivery retry.
            if let Invocation::Succeeded(effect) =
                self.provider.invoke(operation.decided_tool()?, &operation.idempotency_key, &operation.arguments).await
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
            // BROKEN: the log calls a resend of a recorded result an execution retry.
            let retry =
                if self.broken == Some(Broken::MislabelsDeliveryRetries) { Retry::Execution } else { Retry::Delivery };
            log_retry(retry, id, Some(destination), send, reason);
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

/// `base × 2^(n−1)` after the n-th failed send (CONTRACT.md §6).
fn delivery_retry_delay(base: Duration, failed_sends: u32) -> Duration {
    // Capped exponent: the multiplication cannot overflow, and nobody waits for 2^40 × base.
    base.saturating_mul(1 << failed_sends.saturating_sub(1).min(20))
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
