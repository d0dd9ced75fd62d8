//! When an operation has waited long enough to be called unsettled (`settled`, CONTRACT.md
//! section 10).
//!
//! Each operation has its own deadline: the scenario's `deadline_seconds` counted from the later
//! of its submission and the ready line of the incarnation now running, and extended by the time
//! that incarnation took from spawn to its ready line. Neither the harness's nor the runtime's
//! start-up is counted against the runtime, an operation submitted late gets its full deadline,
//! and a runtime slow to start here (a loaded machine, the tracer, an engine to open) is given
//! as much again: its start-up is the harness's one measure of how fast it runs on this machine.

use std::time::Duration;
use tokio::time::Instant;

/// How many times the scenario's deadline a traced runtime is given. `killpoint-tracer` stops it
/// at every durable write, sync and exchange with the world until the harness answers, so its
/// work takes several times as long — the more so on a loaded machine, where the harness answers
/// late — and a deadline written for the runtime alone would measure the tracer.
pub const TRACED_FACTOR: u32 = 3;

/// The deadline the scenario's `deadline_seconds` gives a run, traced or not.
pub fn allowed(scenario_deadline: Duration, traced: bool) -> Duration {
    if traced { scenario_deadline * TRACED_FACTOR } else { scenario_deadline }
}

/// The deadline of an operation submitted at `submitted`, running on an incarnation whose ready
/// line came at `ready` after `start_up` from its spawn, when the scenario allows `allowed`.
pub(super) fn deadline(submitted: Instant, ready: Instant, start_up: Duration, allowed: Duration) -> Instant {
    submitted.max(ready) + allowed + start_up
}

#[cfg(test)]
mod tests {
    use super::deadline;
    use std::time::Duration;
    use tokio::time::Instant;

    const ALLOWED: Duration = Duration::from_secs(3);

    #[test]
    fn an_operation_submitted_after_another_ones_deadline_gets_its_full_deadline() {
        let ready = Instant::now();
        let first = deadline(ready, ready, Duration::ZERO, ALLOWED);
        // A later wave, submitted once the first operation's deadline has passed.
        let submitted = first + Duration::from_secs(1);
        let second = deadline(submitted, ready, Duration::ZERO, ALLOWED);
        assert_eq!(second - submitted, ALLOWED, "the later operation has the whole deadline from its submission");
        assert!(second > first);
    }

    #[test]
    fn the_deadline_counts_from_the_ready_line_of_a_restart_after_the_submission() {
        let submitted = Instant::now();
        let ready = submitted + Duration::from_secs(5);
        assert_eq!(deadline(submitted, ready, Duration::ZERO, ALLOWED), ready + ALLOWED);
    }

    #[test]
    fn a_traced_run_has_three_times_the_scenario_s_deadline() {
        assert_eq!(super::allowed(ALLOWED, false), ALLOWED);
        assert_eq!(super::allowed(ALLOWED, true), ALLOWED * 3);
    }

    #[test]
    fn a_slow_start_extends_the_deadline_by_its_length() {
        let ready = Instant::now();
        let slow = Duration::from_millis(2_500);
        let fast = deadline(ready, ready, Duration::from_millis(3), ALLOWED);
        let extended = deadline(ready, ready, slow, ALLOWED);
        assert_eq!(extended - ready, ALLOWED + slow);
        assert!(extended - fast > Duration::from_secs(2), "{:?}", extended - fast);
    }
}
