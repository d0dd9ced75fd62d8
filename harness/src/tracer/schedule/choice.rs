//! Which held call goes next: probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010)
//! over the calls a settled runtime holds. Every call has a priority drawn from the seed; the
//! highest goes; at `depth - 1` steps drawn from the seed among the first `horizon`, the call that
//! went has its priority lowered below every drawn one. A bug that needs `d` ordering constraints
//! among `n` racing parties over `k` steps is found by one run with probability at least
//! `1 / (n · k^(d-1))`.
//!
//! The parties are not OS threads but what a held call does (its kind, its file, its peer and the
//! operation its request names): a thread pool (tokio's work stealing, a Python executor) runs a
//! task on whichever thread is free, so a thread's identity is timing, while what a call does is
//! the runtime's. Two held calls that do the same thing are told apart by their threads' labels
//! (`threads`), then their thread ids: there the order is the kernel's (see the folder's comment).

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A controlled schedule: a seed, and PCT's depth and horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub seed: u64,
    /// PCT's `d`: 1 draws priorities only; each more adds one priority change point.
    #[serde(default = "Schedule::default_depth")]
    pub depth: u32,
    /// The steps among which change points are drawn (about the run's number of decisions).
    #[serde(default = "Schedule::default_horizon")]
    pub horizon: u32,
}

impl Schedule {
    /// The variable the harness gives the tracer (and so the runtime, which ignores it).
    pub const VARIABLE: &'static str = "KILLPOINT_SCHEDULE";

    pub fn default_depth() -> u32 {
        1
    }

    pub fn default_horizon() -> u32 {
        64
    }

    pub fn seeded(seed: u64) -> Schedule {
        Schedule { seed, depth: Schedule::default_depth(), horizon: Schedule::default_horizon() }
    }

    /// `seed=7 depth=2 horizon=40`, as the variable holds it.
    pub fn to_variable(&self) -> String {
        format!("seed={} depth={} horizon={}", self.seed, self.depth, self.horizon)
    }

    /// The variable's value read back; `Err` says which word was not `name=number`.
    pub fn from_variable(text: &str) -> Result<Schedule, String> {
        let mut schedule = Schedule::seeded(0);
        let mut seeded = false;
        for word in text.split_whitespace() {
            let bad = || format!("{}: expected `seed=N depth=N horizon=N`, found `{word}`", Schedule::VARIABLE);
            let (name, value) = word.split_once('=').ok_or_else(bad)?;
            let value: u64 = value.parse().map_err(|_| bad())?;
            match name {
                "seed" => (schedule.seed, seeded) = (value, true),
                "depth" => schedule.depth = u32::try_from(value).map_err(|_| bad())?.max(1),
                "horizon" => schedule.horizon = u32::try_from(value).map_err(|_| bad())?.max(1),
                _ => return Err(bad()),
            }
        }
        if !seeded {
            return Err(format!("{}: expected a `seed=N`, found `{text}`", Schedule::VARIABLE));
        }
        Ok(schedule)
    }

    /// The steps (1-based) after which the call that went has its priority lowered.
    fn change_points(&self) -> Vec<u64> {
        (1..self.depth).map(|i| 1 + mix(self.seed, &format!("change {i}")) % u64::from(self.horizon)).collect()
    }
}

/// One held call as the choice sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Candidate {
    /// What the call does (see the file's comment).
    pub(super) key: String,
    pub(super) label: String,
    pub(super) tid: i32,
}

/// The priorities of one schedule as it goes.
pub(super) struct Priorities {
    schedule: Schedule,
    changes: Vec<u64>,
    lowered: HashMap<String, u64>,
}

impl Priorities {
    pub(super) fn new(schedule: Schedule) -> Priorities {
        Priorities { schedule, changes: schedule.change_points(), lowered: HashMap::new() }
    }

    /// Drawn priorities sit above every lowered one (`depth` of them at most).
    fn priority(&self, key: &str) -> u64 {
        self.lowered.get(key).copied().unwrap_or_else(|| mix(self.schedule.seed, key) | 1 << 62)
    }

    /// The index in `held` of the call that goes at `step` (1-based); `held` is not empty.
    pub(super) fn choose(&mut self, step: u64, held: &[Candidate]) -> usize {
        let rank =
            |c: &Candidate| (self.priority(&c.key), std::cmp::Reverse(c.label.clone()), std::cmp::Reverse(c.tid));
        let chosen = (0..held.len()).max_by_key(|&i| rank(&held[i])).expect("a choice among no held call");
        for (i, _) in self.changes.iter().enumerate().filter(|(_, at)| **at == step) {
            // The i-th change point lowers below every drawn priority and every earlier change.
            let lowered = u64::from(self.schedule.depth) - 1 - i as u64;
            self.lowered.insert(held[chosen].key.clone(), lowered);
        }
        chosen
    }
}

/// A 64-bit hash of `(seed, text)`: FNV-1a over the text, then splitmix64's finaliser, so that
/// near seeds draw unrelated priorities. Stable across builds and machines (no `RandomState`).
pub(super) fn mix(seed: u64, text: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(keys: &[&str]) -> Vec<Candidate> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| Candidate { key: (*k).into(), label: format!("main.{i}"), tid: i as i32 })
            .collect()
    }

    #[test]
    fn the_variable_reads_back_what_was_written_and_names_a_bad_word() {
        let schedule = Schedule { seed: 7, depth: 2, horizon: 40 };
        assert_eq!(Schedule::from_variable(&schedule.to_variable()), Ok(schedule));
        assert_eq!(Schedule::from_variable("seed=3"), Ok(Schedule::seeded(3)));
        let error = Schedule::from_variable("seed=3 deep=2").unwrap_err();
        assert!(error.contains("found `deep=2`"), "{error}");
        assert!(Schedule::from_variable("depth=2").unwrap_err().contains("expected a `seed=N`"));
    }

    #[test]
    fn the_same_seed_chooses_the_same_and_seeds_reach_both_orders() {
        let two = held(&["durable effects.log", "durable steps.log"]);
        let first = |seed| Priorities::new(Schedule::seeded(seed)).choose(1, &two);
        assert_eq!(first(5), first(5));
        let firsts: std::collections::BTreeSet<usize> = (0..16).map(first).collect();
        assert_eq!(firsts.len(), 2, "16 seeds put each of two parties first at least once");
    }

    #[test]
    fn a_change_point_lowers_the_call_that_went() {
        // depth 2, horizon 1: the change point is step 1, so the first to go is lowered and the
        // other goes next even though its drawn priority is lower.
        let schedule = Schedule { seed: 11, depth: 2, horizon: 1 };
        let two = held(&["a", "b"]);
        let mut priorities = Priorities::new(schedule);
        let first = priorities.choose(1, &two);
        assert_eq!(priorities.choose(2, &two), 1 - first);
        let mut plain = Priorities::new(Schedule { depth: 1, ..schedule });
        assert_eq!(plain.choose(1, &two), first);
        assert_eq!(plain.choose(2, &two), first, "without a change point the same party keeps going first");
    }
}
