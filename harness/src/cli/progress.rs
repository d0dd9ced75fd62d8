//! Progress told in plain lines, for a log rather than a terminal (CI, `| tee`): a search that
//! prints a line per 10 % of its cases says nothing for minutes when each case is slow, and one
//! that prints every case floods a log. Every failure, the last case, each new tenth of the cases
//! and a heartbeat when [`HEARTBEAT`] has passed without a line.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The longest a search stays silent in a log while cases go on finishing.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// The rule, said once at the start so that a reader knows which lines to expect.
pub const RULE: &str =
    "progress: a line per failing case, per 10 % of the cases, for the last one, and at least every 5 s";

/// Which finished cases get a line. Shared by the threads that finish cases: it locks itself.
#[derive(Debug)]
pub struct PlainLines {
    last: Mutex<Instant>,
}

impl PlainLines {
    pub fn new() -> PlainLines {
        PlainLines { last: Mutex::new(Instant::now()) }
    }

    /// Whether case `done` of `total` (counted from 1) gets a line; when it does, the heartbeat
    /// starts again.
    pub fn due(&self, done: usize, total: usize, failed: bool) -> bool {
        let tenth = |n: usize| n * 10 / total.max(1);
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let due =
            failed || done >= total || tenth(done) != tenth(done.saturating_sub(1)) || last.elapsed() >= HEARTBEAT;
        if due {
            *last = Instant::now();
        }
        due
    }
}

impl Default for PlainLines {
    fn default() -> PlainLines {
        PlainLines::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_tenths_and_the_last_case_get_a_line_and_the_rest_wait_for_the_heartbeat() {
        let lines = PlainLines::new();
        let told: Vec<usize> = (1..=14).filter(|&done| lines.due(done, 14, done == 4)).collect();
        // Tenths of 14 change at 2, 3, 5, 6, 7, 9, 10, 12, 13, 14; case 4 failed.
        assert_eq!(told, vec![2, 3, 4, 5, 6, 7, 9, 10, 12, 13, 14]);
        let quiet = PlainLines { last: Mutex::new(Instant::now() - HEARTBEAT) };
        assert!(quiet.due(1, 1000, false), "a case after a silent heartbeat gets a line");
        assert!(!quiet.due(2, 1000, false), "and the heartbeat starts again");
    }
}
