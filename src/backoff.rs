//! Waiting after a service could not be reached: a lookup the provider could not answer, or a
//! policy decision that could not be obtained. Neither is an answer, so the work is simply asked
//! again later, after 50 ms, then twice as long each time, up to 2 s.
//!
//! Kept in memory: a new incarnation asks again at once, which is exactly right.

use std::collections::HashMap;
use std::time::{Duration, Instant};

const FIRST_DELAY: Duration = Duration::from_millis(50);
const MAX_DELAY: Duration = Duration::from_secs(2);

/// A piece of work that can be made to wait.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Task {
    /// Executing or reconciling an operation.
    Operation(String),
    /// Sending an operation's result to a destination.
    Delivery { operation_id: String, destination: String },
}

#[derive(Debug)]
struct Wait {
    until: Instant,
    delay: Duration,
}

#[derive(Debug, Default)]
pub struct Backoff {
    waits: HashMap<Task, Wait>,
}

impl Backoff {
    /// Whether `task` should be left alone for now.
    pub fn is_waiting(&self, task: &Task, now: Instant) -> bool {
        self.waits.get(task).is_some_and(|wait| wait.until > now)
    }

    /// `task` could not go ahead; returns how long it now waits.
    pub fn failed(&mut self, task: Task, now: Instant) -> Duration {
        let delay = match self.waits.get(&task) {
            Some(previous) => (previous.delay * 2).min(MAX_DELAY),
            None => FIRST_DELAY,
        };
        self.waits.insert(task, Wait { until: now + delay, delay });
        delay
    }

    /// `task` went ahead; its next failure starts from the first delay again.
    pub fn succeeded(&mut self, task: &Task) {
        self.waits.remove(task);
    }

    /// The earliest instant after `now` at which a waiting task may go ahead.
    pub fn next_wake(&self, now: Instant) -> Option<Instant> {
        // Only future instants: a wait that has run out must not make the worker wake again and
        // again for a task that is no longer there to do.
        self.waits.values().map(|wait| wait.until).filter(|&until| until > now).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_reset_on_success() {
        let mut backoff = Backoff::default();
        let task = Task::Operation("op-1".to_owned());
        let now = Instant::now();
        let delays: Vec<_> = (0..8).map(|_| backoff.failed(task.clone(), now)).collect();
        assert_eq!(delays[0], FIRST_DELAY);
        assert_eq!(delays[1], FIRST_DELAY * 2);
        assert_eq!(*delays.last().unwrap(), MAX_DELAY);
        assert!(backoff.is_waiting(&task, now));
        assert_eq!(backoff.next_wake(now), Some(now + MAX_DELAY));
        assert_eq!(backoff.next_wake(now + MAX_DELAY), None);

        backoff.succeeded(&task);
        assert!(!backoff.is_waiting(&task, now));
        assert_eq!(backoff.failed(task, now), FIRST_DELAY);
    }
}
