//! What a machine-crash kill took (CONTRACT.md §7-6): a commit the runtime had made but not yet
//! synced is gone after the power loss, and §7-6 lets it be — a success and its outbox must be
//! durable before the first delivery is *sent*, not when they are committed. So a kill at
//! `after_result_write` (or `after_policy_revocation`) is held to what a kill just before that
//! commit allows when the runtime synced nothing between the world's answer and the kill.

use crate::model::boundary::Boundary;
use crate::model::crash::Crash;
use crate::run::driver::{Happening, Run};
use crate::scenario::Fault;

/// Whether the machine-crash kill of `fault` (index `index`) at `after_result_write` came before
/// the runtime synced anything after the provider's answer whose commit the boundary names: no
/// completed sync (the tracer's count) between the last point where the tracer saw that answer
/// (`after_provider_success`) and the kill. `false` when the tracer saw no such answer: the kill
/// is then held to the boundary as written. (A refusal's commit, `after_policy_revocation`, needs
/// nothing: a refusal lost is asked again and refused again.)
pub(super) fn commit_unsynced(run: &Run, index: usize, fault: &Fault) -> bool {
    let answer = match fault.at {
        Boundary::AfterResultWrite => Boundary::AfterProviderSuccess,
        _ => return false,
    };
    if run.crash != Crash::Machine {
        return false;
    }
    let Some(killed) = run.killed.get(index).copied().flatten() else { return false };
    let Some(incarnation) = run.timeline.iter().filter(|m| m.seq >= killed).find_map(|m| match m.happening {
        Happening::Killed { incarnation } => Some(incarnation),
        _ => None,
    }) else {
        return false;
    };
    let points: Vec<_> = run.syscall_points.iter().filter(|p| p.incarnation == incarnation).collect();
    let answered = points
        .iter()
        .rposition(|p| p.boundaries.iter().any(|a| a.boundary == answer && a.operation == fault.operation));
    match (answered, points.last()) {
        (Some(i), Some(last)) => last.state.synced == points[i].state.synced,
        _ => false,
    }
}
