//! The fake world's state at an instant, and a world started from it.
//!
//! `killpoint explore` builds each crash state from one record run instead of re-running the
//! workload's prefix for every crash point: at the point, while the runtime is held stopped, it
//! takes a [`WorldSnapshot`] through a [`WorldState`] handle; each case then starts a world from
//! it (`World::start_from`) and only the recovery runs against it.
//!
//! A snapshot holds everything a later request is answered from: the ledger (and the clock's
//! count, so new entries number after the old ones and time goes on from the same origin), the
//! provider's effects (a keyed call replays the first answer, call numbers go on), the consumers'
//! applied keys and receipt counts, the revocations in force, every fault still armed with what it
//! has left, and the fence. What it does not hold is what is in flight: an answer being held,
//! delayed or sent late belongs to a connection of the killed incarnation, which nobody reads
//! again; and a request whose bytes the world has not read yet. The caller takes a snapshot only
//! when no request is being handled (the harness waits until the world has recorded every request
//! the tracer saw sent).

use crate::consumers::Receipts;
use crate::faults::Faults;
use crate::fence::Fence;
use crate::ledger::{Clock, Entry, Event, Ledger};
use crate::model::Minds;
use crate::provider::Effects;
use crate::revocation::Revocation;
use std::sync::{Arc, Mutex};

/// A world's state at one instant: see the module's doc for what it holds and what it cannot.
/// It is written to disk beside a written case (as JSON), to replay the case from its crash state.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct WorldSnapshot {
    pub(crate) ticks: u64,
    pub(crate) micros: u64,
    pub(crate) entries: Vec<Entry>,
    pub(crate) effects: Effects,
    pub(crate) receipts: Receipts,
    pub(crate) revocations: Vec<Revocation>,
    pub(crate) minds: Minds,
    pub(crate) faults: Faults,
    pub(crate) fence: u32,
}

impl WorldSnapshot {
    /// The ledger as it was.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The clock's last tick when it was taken: every entry (and harness mark) up to it is in it.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// How many entries requests made (every entry but the harness's own revocations): what the
    /// world has recorded of the requests it was sent.
    pub fn requests_recorded(&self) -> usize {
        self.entries.iter().filter(|e| !matches!(e.event, Event::Revocation { .. })).count()
    }

    /// A clock that goes on from this snapshot's.
    pub fn clock(&self) -> Clock {
        Clock::resumed(self.ticks, self.micros)
    }
}

/// A handle on a running world's state, cloneable and `'static` (a tracer's task holds one):
/// it takes snapshots, nothing else.
#[derive(Clone)]
pub struct WorldState {
    pub(crate) ledger: Arc<Ledger>,
    pub(crate) faults: Arc<Faults>,
    pub(crate) fence: Arc<Fence>,
    pub(crate) effects: Arc<Mutex<Effects>>,
    pub(crate) receipts: Arc<Mutex<Receipts>>,
    pub(crate) revocations: Arc<Mutex<Vec<Revocation>>>,
    pub(crate) minds: Arc<Mutex<Minds>>,
}

impl WorldState {
    /// The world's state now. The servers' own locks are taken before the ledger's, in the order
    /// each handler takes them, so the cut is consistent with the ledger (a handler holds one of
    /// them while it records) and nothing deadlocks.
    pub fn snapshot(&self) -> WorldSnapshot {
        let effects = self.effects.lock().expect("provider lock");
        let receipts = self.receipts.lock().expect("consumer lock");
        let revocations = self.revocations.lock().expect("policy lock");
        let minds = self.minds.lock().expect("model lock");
        let faults = self.faults.copy();
        let entries = self.ledger.lock();
        let clock = self.ledger.clock();
        WorldSnapshot {
            ticks: clock.now(),
            micros: clock.micros(),
            entries: entries.clone(),
            effects: effects.clone(),
            receipts: receipts.clone(),
            revocations: revocations.clone(),
            minds: minds.clone(),
            faults,
            fence: self.fence.current(),
        }
    }

    /// How many entries requests made so far (see [`WorldSnapshot::requests_recorded`]).
    pub fn requests_recorded(&self) -> usize {
        self.ledger.count(|e| !matches!(e.event, Event::Revocation { .. }))
    }

    /// Waits until requests have made at least `n` entries, or `deadline`; says whether they
    /// did. Woken by each entry, never by a timer.
    pub async fn recorded_at_least(&self, n: usize, deadline: tokio::time::Instant) -> bool {
        loop {
            // Registered before the count is read: an entry between the two still wakes it.
            let changed = self.ledger.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.requests_recorded() >= n {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.requests_recorded() >= n;
            }
        }
    }
}
