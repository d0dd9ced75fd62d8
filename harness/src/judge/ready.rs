//! `ready`: every incarnation became ready (CONTRACT.md §2-6). A run whose runtime never printed
//! its ready line — or printed one the harness refuses, or declared a probe it did not connect —
//! stopped there: it broke the ready line's rule, and nothing after it (no operation could
//! settle) is its fault to report.

use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::driver::{Abort, Run};

/// The run's one `ready` violation, if an incarnation did not become ready (the first or one
/// after a restart); the reason says which, and what it did instead.
pub(super) fn ready(run: &Run, violations: &mut Vec<Violation>) {
    if let Some(Abort::NotReady(reason)) = &run.aborted {
        violations.push(Violation::new(
            breach!(Ready, "§2-6"),
            None,
            format!(
                "the runtime did not become ready (CONTRACT.md §2-6: the ready line, by the deadline), so the run stopped: {reason}"
            ),
            Vec::new(),
        ));
    }
}
