//! A campaign as a CI system reads it: every case an exploration ran (or every schedule a random
//! search drew), with its verdict, its invariants and its time, and what was searched
//! (`explore --json`, `random --json`, `--junit`). One shard's record (`--shard K/N`) or several
//! merged into one (`killpoint merge`, [`merge`]): a campaign split across machines is the user's
//! CI's to run, never ours, and comes back as one result.
//!
//! The record says exactly what ran, so that shards of different searches, workloads, runtimes,
//! contracts or modes are refused rather than mixed ([`Identity`], [`Search`]).

mod junit;
mod merge;

pub use merge::merge;

use serde::{Deserialize, Serialize};

/// The schema of a campaign record; a record of another is refused.
pub const SCHEMA: &str = "killpoint-campaign/2";

/// One exploration's cases (or several shards' merged), and what was explored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    pub schema: String,
    pub identity: Identity,
    /// This record's shard, `None` for an unsharded exploration or a merge.
    pub shard: Option<Shard>,
    /// The shards a merged record was made of, in order (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged: Vec<Shard>,
    /// Every case run, by name.
    pub cases: Vec<CaseRecord>,
    pub totals: Totals,
}

/// What was searched, against what, how: two shards of one campaign agree on all of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub killpoint_version: String,
    pub contract: String,
    pub runtime: String,
    pub runtime_args: Vec<String>,
    pub runtime_sha256: Option<String>,
    /// `process` or `machine`.
    pub crash: String,
    pub probe: bool,
    pub search: Search,
}

/// The search a campaign ran: its kind and what only that kind has.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Search {
    /// `killpoint explore`: every crash point of one workload.
    Explore {
        /// The workload's scenario name, and the SHA-256 of its file (of the embedded text for a
        /// standard one).
        workload: String,
        workload_sha256: Option<String>,
        /// `boundaries` or `syscalls`; 1 or 2.
        points: String,
        depth: u8,
    },
    /// `killpoint random`: drawn workloads and schedules. A shard draws from its own seed, made
    /// from the campaign's ([`shard_seed`](crate::search::random::shard_seed)).
    Random {
        /// The campaign's seed, and the schedules each shard draws.
        seed: u64,
        cases: u32,
    },
}

impl Search {
    /// `explore` or `random`.
    pub fn kind(&self) -> &'static str {
        match self {
            Search::Explore { .. } => "explore",
            Search::Random { .. } => "random",
        }
    }

    /// What a person calls it: the workload explored, or the random search's seed.
    pub fn subject(&self) -> String {
        match self {
            Search::Explore { workload, .. } => workload.clone(),
            Search::Random { seed, cases } => format!("seed {seed}, {cases} case(s) a shard"),
        }
    }
}

/// Shard `k` of `n` (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shard {
    pub k: u64,
    pub n: u64,
}

/// One case: its name (explore's kill schedule, `after_dispatch.charge.1`; random's draw,
/// `random-SEED.draw-007`), how it ended, the invariants it violated, how long it took, and where a
/// failing one was written and kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRecord {
    pub name: String,
    pub status: CaseOutcome,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violated: Vec<String>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
}

/// How a case ended (`explore`'s four words; a random draw passes or fails).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseOutcome {
    Pass,
    Partial,
    NotReached,
    Fail,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub cases: usize,
    pub passed: usize,
    pub partial: usize,
    pub not_reached: usize,
    pub failed: usize,
    pub duration_ms: u64,
}

impl Totals {
    fn of(cases: &[CaseRecord]) -> Totals {
        let count = |o: CaseOutcome| cases.iter().filter(|c| c.status == o).count();
        Totals {
            cases: cases.len(),
            passed: count(CaseOutcome::Pass),
            partial: count(CaseOutcome::Partial),
            not_reached: count(CaseOutcome::NotReached),
            failed: count(CaseOutcome::Fail),
            duration_ms: cases.iter().map(|c| c.duration_ms).sum(),
        }
    }
}

impl Campaign {
    /// The record of `cases` (in any order: kept by name), explored as `identity` says.
    pub fn new(identity: Identity, shard: Option<Shard>, mut cases: Vec<CaseRecord>) -> Campaign {
        cases.sort_by(|a, b| a.name.cmp(&b.name));
        let totals = Totals::of(&cases);
        Campaign { schema: SCHEMA.to_owned(), identity, shard, merged: Vec::new(), cases, totals }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a campaign serialises")
    }

    /// A record read back: `Err` says what was expected and what was found.
    pub fn from_json(text: &str) -> Result<Campaign, String> {
        let campaign: Campaign = serde_json::from_str(text)
            .map_err(|e| format!("expected a campaign record (`explore --json`, `random --json`), found: {e}"))?;
        if campaign.schema != SCHEMA {
            return Err(format!("expected schema `{SCHEMA}`, found `{}`", campaign.schema));
        }
        Ok(campaign)
    }

    pub fn to_junit(&self) -> String {
        junit::to_junit(self)
    }

    /// Whether any case failed.
    pub fn failed(&self) -> bool {
        self.totals.failed > 0
    }
}
