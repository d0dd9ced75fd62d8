//! How an exploration is run: where it looks for crash points, how deep, on how many threads,
//! and which shard of the cases is this process's.

use super::case::Case;
use crate::run::driver::RunOptions;

/// Where an exploration looks for crash points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Points {
    /// Every occurrence of every named boundary (probe announcements, provider calls, `202`s).
    Boundaries,
    /// System calls, seen by `killpoint-tracer` (Linux x86_64): every sync, rename and unlink under
    /// the data dir, before and after; every request to the fake world, before; every answer
    /// from it, after. Plain writes between two of them are not explored yet.
    Syscalls,
}

/// How an exploration is run.
#[derive(Debug, Clone)]
pub struct ExploreOptions {
    /// 1: every point of the workload; 2: also every point of each recovery.
    pub depth: u8,
    pub run: RunOptions,
    /// Cases run at once, each with its own data dir, fake world and ports.
    pub jobs: usize,
    /// Only the cases whose name hashes into shard `k` of `n` (1-based): the same split as
    /// `cargo nextest run --partition hash:k/n` gives the trials.
    pub shard: Option<(u64, u64)>,
    /// Stop at the first failing case.
    pub first_failure: bool,
    /// Where the crash points are: the named boundaries, or system calls (`killpoint-tracer`).
    pub points: Points,
    /// Keep the data dir and logs of each failing case (the report says where). Off where failures
    /// are expected (a test that explores a broken runtime), so nothing is left behind.
    pub keep_failures: bool,
    /// Skip points with the same crash state as the one before. With operations in flight
    /// together, which points share a state varies from run to run; trial lists, which must name
    /// the same cases in every process (nextest lists, then runs each trial in a process of its
    /// own), turn it off.
    pub prune: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            depth: 1,
            run: RunOptions::default(),
            jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
            shard: None,
            first_failure: false,
            points: Points::Boundaries,
            keep_failures: true,
            prune: true,
        }
    }
}

/// Stable shard of a case name (FNV-1a, so every machine and every version agrees).
pub fn shard_of(name: &str, shards: u64) -> u64 {
    let mut hash: u64 = 0xcbf29ce484222325;
    for b in name.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x100000001b3);
    }
    hash % shards + 1
}

/// Splits `cases` of the workload `scenario` into this shard's and the other shards' (every case
/// is this shard's when there are no shards).
pub(super) fn shard(cases: Vec<Case>, scenario: &str, shard: Option<(u64, u64)>) -> (Vec<Case>, Vec<Case>) {
    match shard {
        Some((k, n)) => cases.into_iter().partition(|c| shard_of(&format!("{}/{}", scenario, c.name()), n) == k),
        None => (cases, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_every_name_once() {
        let names: Vec<String> = (0..200).map(|i| format!("w/after_dispatch.op{i}.1")).collect();
        let mut counts = [0usize; 3];
        for name in &names {
            let shard = shard_of(name, 3);
            assert!((1..=3).contains(&shard));
            counts[shard as usize - 1] += 1;
            assert_eq!(shard, shard_of(name, 3), "stable");
        }
        assert_eq!(counts.iter().sum::<usize>(), 200);
        assert!(counts.iter().all(|&c| c > 40), "{counts:?}");
    }
}
