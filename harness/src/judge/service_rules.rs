//! The rules of a runtime's server (CONTRACT.md §2-9 to §2-13, `rules::SERVICE_RULES`) in one
//! run: which of them it exercises — what was done to the services and to the worker while they
//! lived — and, in such a run, every violation of an invariant that checks one of them names it
//! too: a step run twice through a server's restart breaks §2-9 as well as §5-1. A run without
//! services exercises none of them.

use super::rules::{SERVICE_RULES, ServiceRun};
use super::verdict::Violation;
use crate::run::driver::{Happening, Run};

/// The service rules `run` exercises, in the contract's order.
pub(super) fn exercised(run: &Run) -> Vec<&'static str> {
    let happened = |wanted: fn(&Happening) -> bool| run.timeline.iter().any(|m| wanted(&m.happening));
    if !happened(|h| matches!(h, Happening::ServiceStarted { .. })) {
        return Vec::new();
    }
    let fired = run.service_hits.iter().any(|hit| *hit);
    let frozen = happened(|h| matches!(h, Happening::Frozen { .. } | Happening::SyscallFrozen { .. }));
    let killed = happened(|h| matches!(h, Happening::Killed { .. } | Happening::SyscallKill { .. }));
    SERVICE_RULES
        .iter()
        .filter(|(_, wanted)| match wanted {
            ServiceRun::ServiceFault => fired,
            ServiceRun::WorkerFrozen => frozen,
            ServiceRun::WorkerKilledOrFrozen => killed || frozen,
        })
        .map(|(id, _)| *id)
        .collect()
}

/// Each violation names the exercised service rules its invariant checks.
pub(super) fn name(exercised: &[&'static str], violations: &mut [Violation]) {
    for violation in violations {
        for rule in exercised {
            violation.also_breaks(rule);
        }
    }
}
