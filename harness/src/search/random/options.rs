//! What a random search is asked for: how many cases, from which seed, where a failure is written.

use crate::run::driver::RunOptions;
use std::path::PathBuf;

/// What to search and how long.
#[derive(Debug, Clone)]
pub struct RandomOptions {
    /// Cases to draw before the search stops finding nothing.
    pub cases: u32,
    /// The seed of the search; the same seed draws the same cases and shrinks them the same way.
    pub seed: u64,
    /// Where a failing case's file is written.
    pub out: PathBuf,
    /// Runs proptest spends shrinking a failing case (dropping the faults it does not need then
    /// takes at most one run per fault left for each fault dropped).
    pub max_shrink_iters: u32,
    /// Let operations share waves (in flight at once). A failure that needs a particular
    /// interleaving may not come back when a case is run again, so it shrinks poorly; without
    /// waves every drawn case runs the same way each time.
    pub waves: bool,
    pub run: RunOptions,
}

impl RandomOptions {
    /// `KILLPOINT_RANDOM_CASES` cases (default `cases`), from seed `KILLPOINT_RANDOM_SEED` (default
    /// a new one), a failing case written to `out`.
    pub fn from_env(cases: u32, out: impl Into<PathBuf>) -> Result<RandomOptions, String> {
        let number = |name: &str| match std::env::var(name) {
            Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| format!("{name} expects a number, found `{v}`")),
            Err(_) => Ok(None),
        };
        let cases = match number("KILLPOINT_RANDOM_CASES")? {
            Some(n) => u32::try_from(n).map_err(|_| format!("KILLPOINT_RANDOM_CASES is too large: {n}"))?,
            None => cases,
        };
        Ok(RandomOptions {
            cases,
            seed: number("KILLPOINT_RANDOM_SEED")?.unwrap_or_else(new_seed),
            out: out.into(),
            max_shrink_iters: 64,
            waves: true,
            run: RunOptions::default(),
        })
    }
}

/// A seed nobody chose: the clock's nanoseconds and the process id, mixed (SplitMix64's
/// finaliser) so that seeds drawn a second apart do not share their leading digits.
pub fn new_seed() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    mix((nanos as u64) ^ (u64::from(std::process::id()) << 32))
}

/// The seed shard `k` of a campaign seeded `seed` draws from: every machine of a campaign given
/// the same `--seed` draws other schedules, and a shard's failure replays with its own seed alone.
pub fn shard_seed(seed: u64, k: u64) -> u64 {
    mix(seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    #[test]
    fn shards_of_one_seed_draw_from_seeds_of_their_own() {
        let seeds: std::collections::BTreeSet<u64> = (1..=64).map(|k| super::shard_seed(42, k)).collect();
        assert_eq!(seeds.len(), 64);
        assert!(!seeds.contains(&42));
        assert_eq!(super::shard_seed(42, 3), super::shard_seed(42, 3));
    }
}
