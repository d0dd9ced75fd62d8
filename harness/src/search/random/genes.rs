//! Genes: what a case is drawn as (numbers and flags, which proptest shrinks), before they are
//! read into a schedule. The draws, and their order, are what a seed reproduces.

use fake_tool::ToolKind;
use proptest::prelude::*;

/// Tenants operations are drawn from: two, so that a revocation sometimes reaches another
/// operation and sometimes does not.
pub const TENANTS: [&str; 2] = ["acme", "globex"];
/// Consumers operations deliver to.
pub const DESTINATIONS: [&str; 3] = ["ledger", "mailer", "audit"];
/// A schedule has at most this many faults (kills, provider faults, consumer faults).
pub const MAX_FAULTS: usize = 4;
/// A fault gene's point is drawn below this: no operation has more boundary occurrences ahead of
/// it (submission, dispatch, call, success, write and two deliveries).
pub(super) const POINTS: usize = 8;

/// What a fault gene does where it lands. Only `after_dispatch` has provider faults; anywhere
/// else every blow is a kill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blow {
    Kill,
    Fail,
    Drop,
    Delay,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct FaultGene {
    /// Which of the boundary occurrences still ahead of the operation (modulo their number).
    pub(super) point: usize,
    pub(super) blow: Blow,
    /// Withdraw the operation's tool for its tenant as the kill lands.
    pub(super) revoke: bool,
}

#[derive(Debug, Clone)]
pub(super) struct OperationGene {
    pub(super) kind: ToolKind,
    pub(super) destinations: Vec<&'static str>,
    pub(super) tenant: usize,
    /// Run in the previous operation's wave, when that is safe to judge.
    pub(super) join: bool,
    pub(super) faults: Vec<FaultGene>,
}

/// A service fault's gene (`services.rs`): which operation, which of its first-time boundaries,
/// which action, which declared service (one past the last: every one).
#[derive(Debug, Clone, Copy)]
pub(super) struct ServiceGene {
    pub(super) operation: usize,
    pub(super) point: usize,
    pub(super) action: usize,
    pub(super) service: usize,
}

#[derive(Debug, Clone)]
pub(super) struct Genes {
    pub(super) operations: Vec<OperationGene>,
    /// (destination pick, times)
    pub(super) consumer_faults: Vec<(usize, u32)>,
    /// Drawn only when services are declared ([`genes_with_services`]).
    pub(super) services: Vec<ServiceGene>,
}

pub(super) fn genes() -> impl Strategy<Value = Genes> {
    let blow = prop_oneof![4 => Just(Blow::Kill), 1 => Just(Blow::Fail), 1 => Just(Blow::Drop), 1 => Just(Blow::Delay)];
    let fault = (0..POINTS, blow, prop::bool::weighted(0.2)).prop_map(|(point, blow, revoke)| FaultGene {
        point,
        blow,
        revoke,
    });
    let operation = (
        prop::sample::select(ToolKind::ALL.to_vec()),
        prop::sample::subsequence(DESTINATIONS.to_vec(), 0..=2),
        0..TENANTS.len(),
        any::<bool>(),
        prop::collection::vec(fault, 0..=2),
    )
        .prop_map(|(kind, destinations, tenant, join, faults)| OperationGene {
            kind,
            destinations,
            tenant,
            join,
            faults,
        });
    (prop::collection::vec(operation, 2..=5), prop::collection::vec((0..DESTINATIONS.len(), 1u32..=2), 0..=1))
        .prop_map(|(operations, consumer_faults)| Genes { operations, consumer_faults, services: Vec::new() })
}

/// [`genes`] and, four times in five, one service fault's gene: drawn after the others, so the
/// rest of a case is what the same numbers draw without services. Shrinking drops it first when
/// the failure does not need it.
pub(super) fn genes_with_services() -> impl Strategy<Value = Genes> {
    let service = (0..8usize, 0..8usize, 0..4usize, 0..8usize)
        .prop_map(|(operation, point, action, service)| ServiceGene { operation, point, action, service });
    (genes(), prop::option::weighted(0.8, service)).prop_map(|(mut g, service)| {
        g.services = service.into_iter().collect();
        g
    })
}
