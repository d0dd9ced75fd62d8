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
    /// `cargo nextest run --partition hash:k/n` gives the trials. A depth-2 case goes with its
    /// depth-1 case (see [`level`]).
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
    /// With operations in flight together, record the workload a second time and say which
    /// depth-1 points the two runs disagree on (see `interleaving`). Trial lists, listed again in
    /// every process, turn it off: one record run each.
    pub second_record: bool,
    /// Over system calls: re-run the workload's prefix for every case, instead of running only
    /// the recovery from the crash state built in the record run (`crate::run::built`).
    pub rerun_prefix: bool,
}

impl Default for ExploreOptions {
    fn default() -> Self {
        ExploreOptions {
            depth: 1,
            run: RunOptions::default(),
            jobs: default_jobs(),
            shard: None,
            first_failure: false,
            points: Points::Boundaries,
            keep_failures: true,
            prune: true,
            second_record: true,
            rerun_prefix: false,
        }
    }
}

/// Cases (and `certify`'s scenarios) run at once when `--jobs` is not given: twice the cores. A
/// case mostly waits, on the runtime's start and recovery and on the world's answers, so one per
/// core leaves the cores idle. Measured on a quiet 2-core machine, release build: `bench
/// scenarios/after_submit.toml --points syscalls --no-probe --depth 2` ran a median 85 cases/s with
/// 2 at once and 112 with 4; `certify` of the Python example took 11.9 s and 8.6 s. Where cases
/// compute rather than wait it costs a little: the concurrent wave explored with the probe at
/// depth 2 (both cores busy) ran 38 cases/s with 4 at once and 42 with 2.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()) * 2
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

/// What one depth of an exploration runs in this process.
#[derive(Debug)]
pub(super) struct Level {
    /// The cases to run (and judge).
    pub(super) run: Vec<Case>,
    /// Cases of this depth in other shards.
    pub(super) other_shards: usize,
}

/// The cases of depth `depth` of the workload `scenario` that this process runs: at depth 1 its
/// shard's; deeper, every case it was given, since they come from the recoveries of its own runs.
/// A depth-2 case is a point of one depth-1 run's recovery, and which points a recovery passes
/// varies from run to run when operations are in flight together: only the process that ran the
/// depth-1 case saw that recovery, so only it can run every case of it, and no other shard runs
/// them again. (Each shard running every depth-1 case for its recovery ran each N times, and N
/// recoveries that disagree leave some depth-2 cases to no shard.)
pub(super) fn level(cases: Vec<Case>, depth: u32, scenario: &str, options: &ExploreOptions) -> Level {
    if depth > 1 {
        return Level { run: cases, other_shards: 0 };
    }
    let (run, others) = shard(cases, scenario, options.shard);
    Level { run, other_shards: others.len() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// `Some((k, n))`: shard k of n; `None`: unsharded.
    type Shard = Option<(u64, u64)>;

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

    /// Each of `shards` (`None`: unsharded) exploring `depth1` to depth 2, where `recovery` gives
    /// the depth-2 cases of a depth-1 case as the process that ran it saw them. Returns, for each
    /// case run, the shards that ran it (0: unsharded).
    fn explored(
        shards: &[Shard],
        depth1: &[Case],
        recovery: &dyn Fn(Shard, &Case) -> Vec<Case>,
    ) -> BTreeMap<String, Vec<u64>> {
        let mut ran = BTreeMap::<String, Vec<u64>>::new();
        for &shard in shards {
            let options = ExploreOptions { depth: 2, shard, ..ExploreOptions::default() };
            let first = level(depth1.to_vec(), 1, "w", &options);
            let next: Vec<Case> = first.run.iter().flat_map(|c| recovery(shard, c)).collect();
            let second = level(next, 2, "w", &options);
            let k = shard.map_or(0, |(k, _)| k);
            for case in first.run.iter().chain(&second.run) {
                ran.entry(case.name()).or_default().push(k);
            }
        }
        ran
    }

    #[test]
    fn shards_run_every_case_once_at_depth_1_and_depth_2() {
        use super::super::fixtures::point;
        use crate::model::boundary::Boundary;
        let case = |kills| Case { kills, revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
        let depth1: Vec<Case> = (1..=12)
            .flat_map(|i| {
                [Boundary::BeforeDispatch, Boundary::AfterDispatch]
                    .map(|at| case(vec![point(at, &format!("op{i}"), 1)]))
            })
            .collect();
        // A recovery passes a few points; with operations in flight together, which ones varies
        // from run to run, so each process that runs a depth-1 case sees a recovery of its own.
        let recovery = |shard: Shard, c: &Case| -> Vec<Case> {
            let extra = shard.map_or(0, |(k, _)| k % 2);
            (1..=3 + extra)
                .map(|n| case(vec![c.kills[0].clone(), point(Boundary::AfterProviderSuccess, "op1", n as u32)]))
                .collect()
        };
        let n = 3;
        let shards: Vec<Shard> = (1..=n).map(|k| Some((k, n))).collect();
        let ran = explored(&shards, &depth1, &recovery);
        for c in &depth1 {
            let by = &ran[&c.name()];
            assert_eq!(by.len(), 1, "depth 1: `{}` ran in shards {by:?} of {n}", c.name());
            // Its depth-2 cases are those of the one recovery seen, each run once, in that shard.
            for next in recovery(Some((by[0], n)), c) {
                let got = ran.get(&next.name());
                assert_eq!(
                    got,
                    Some(by),
                    "depth 2: `{}` ran in shards {got:?}, its depth-1 case in {by:?}",
                    next.name()
                );
            }
        }
        // With the same recovery in every process, the shards together are the unsharded list.
        let same = |_: Shard, c: &Case| recovery(None, c);
        let whole = explored(&[None], &depth1, &same);
        let split = explored(&shards, &depth1, &same);
        assert_eq!(split.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>());
        assert!(split.values().all(|by| by.len() == 1), "{split:?}");
    }
}
