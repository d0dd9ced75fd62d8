//! Which policy answers may have allowed a use of the provider or of a consumer (CONTRACT.md §8-3):
//! the checks of the use's subject, for its operation, made by the incarnation that sent it since
//! that incarnation's previous use of it — placed by the world's `Killpoint-Incarnation` stamps
//! (§9-1), not by the clock.
//!
//! A kill does not stop the world from recording what the killed incarnation had already written
//! to its socket: such a request lands after the harness's `Killed` mark, stamped with the
//! incarnation that sent it, and the answer that allowed it was given to that incarnation while it
//! lived. A check the world recorded only after that incarnation was killed was never read by a
//! live process and allows nothing. A request without the stamp (`fenced` reports it) is placed
//! by the clock: its permission must come after the last kill before it.

use crate::run::driver::{Happening, Run};
use crate::scenario::Operation;
use fake_tool::{Entry, Event, PolicyAnswer, Subject};

/// One use — a call, or a receipt at one destination — and the checks that may have allowed it.
pub(super) struct Use<'a> {
    pub(super) entry: &'a Entry,
    pub(super) checks: Vec<&'a Entry>,
}

impl Use<'_> {
    /// Whether an allowed answer is among the use's checks.
    pub(super) fn allowed(&self) -> bool {
        self.checks.iter().any(|e| matches!(&e.event, Event::PolicyCheck { answer: PolicyAnswer::Allowed, .. }))
    }

    /// The `seq` of the answer the use went ahead on: the last of its checks, if it allowed it.
    pub(super) fn allowed_by(&self) -> Option<u64> {
        self.checks
            .last()
            .filter(|e| matches!(&e.event, Event::PolicyCheck { answer: PolicyAnswer::Allowed, .. }))
            .map(|e| e.seq)
    }
}

/// Each of `uses` (one operation's uses of `subject`, in ledger order) with its checks.
pub(super) fn authorised<'a>(run: &'a Run, op: &Operation, subject: &Subject, uses: &[&'a Entry]) -> Vec<Use<'a>> {
    uses.iter()
        .enumerate()
        .map(|(i, &entry)| {
            // An answer allows one use, in the incarnation that received it: the window opens at
            // that incarnation's previous use (any earlier use, for an unstamped one).
            let previous = uses[..i]
                .iter()
                .rev()
                .find(|e| entry.incarnation.is_none() || e.incarnation == entry.incarnation)
                .map_or(0, |e| e.seq);
            let checks = run
                .ledger
                .iter()
                .filter(|e| e.seq > previous && e.seq < entry.seq && placed_with(run, e, entry))
                .filter(|e| {
                    matches!(&e.event, Event::PolicyCheck { tenant, actor, operation: Some(o), subject: s, .. }
                        if *o == op.id && *tenant == op.tenant && *actor == op.actor && s == subject)
                })
                .collect();
            Use { entry, checks }
        })
        .collect()
}

/// Whether `check` was answered to the incarnation that made `use_`.
fn placed_with(run: &Run, check: &Entry, use_: &Entry) -> bool {
    match use_.incarnation {
        Some(i) => check.incarnation == Some(i) && killed(run, i).is_none_or(|k| check.seq < k),
        None => check.seq > last_kill_before(run, use_.seq),
    }
}

/// The `seq` of the mark that says incarnation `i` was killed, if it was.
fn killed(run: &Run, i: u32) -> Option<u64> {
    run.timeline
        .iter()
        .find(|m| matches!(m.happening, Happening::Killed { incarnation } if incarnation == i))
        .map(|m| m.seq)
}

fn last_kill_before(run: &Run, seq: u64) -> u64 {
    run.timeline
        .iter()
        .filter(|m| matches!(m.happening, Happening::Killed { .. }) && m.seq < seq)
        .map(|m| m.seq)
        .max()
        .unwrap_or(0)
}
