//! `killpoint random`: drawn workloads and fault schedules; the first that fails is shrunk and
//! written as a scenario file. With `--json`/`--junit`, every drawn schedule's record (and
//! `--shard K/N`: this machine's share of a campaign, for `killpoint merge`).

use super::campaign::{Draws, Records};
use super::progress::PlainLines;
use super::setup::{run_options, target};
use super::{Runtime, Usage};
use crate::run::incarnation::Target;
use crate::search::random::{self, Failure, RandomOptions, RunDone};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// `killpoint random`'s options.
#[derive(Debug, Clone)]
pub struct RandomCommand {
    pub runtime: Runtime,
    /// `--cases`: schedules to draw (on each shard).
    pub cases: u32,
    /// `--seed`: the search's (or the campaign's) seed; default a new one.
    pub seed: Option<u64>,
    /// `--shard K/N`: this search is shard K of a campaign, drawing from its own seed.
    pub shard: Option<(u64, u64)>,
    /// `--out`: where the shrunk failing case is written.
    pub out: PathBuf,
    pub records: Records,
}

impl RandomCommand {
    /// Exit 1 with the shrunk case's file and rerun command when a case fails.
    pub fn run(&self) -> Result<ExitCode, Usage> {
        self.records.writable()?;
        let (campaign_seed, seed) = match (self.seed, self.shard) {
            (None, Some((k, n))) => {
                return Err(format!(
                    "--shard {k}/{n} needs --seed S: every shard of a campaign is given the campaign's seed, and draws from its own seed made from it"
                )
                .into());
            }
            (seed, None) => (seed.unwrap_or_else(random::new_seed), None),
            (Some(seed), Some((k, _))) => (seed, Some(random::shard_seed(seed, k))),
        };
        let target = target(&self.runtime)?;
        Ok(self.search(&target, campaign_seed, seed.unwrap_or(campaign_seed)))
    }

    fn search(&self, target: &Target, campaign_seed: u64, seed: u64) -> ExitCode {
        let cases = self.cases;
        let options = RandomOptions {
            cases,
            seed,
            out: self.out.clone(),
            max_shrink_iters: 64,
            waves: true,
            run: run_options(&self.runtime),
        };
        let shard =
            self.shard.map_or(String::new(), |(k, n)| format!("shard {k}/{n} of campaign seed {campaign_seed}: "));
        outln!(
            "random: {cases} case(s) against {}, {shard}seed {seed} (replay with --seed {seed})",
            target.program.display()
        );
        errln!("{}", super::progress::RULE);
        let lines = PlainLines::new();
        let shrinking = AtomicBool::new(false);
        let draws = Draws::new(seed, cases);
        let tell = |done: RunDone| {
            draws.add(&done);
            tell(&lines, &shrinking, cases, done);
        };
        let found = match random::search_telling(target, &options, &tell) {
            Ok(f) => f,
            Err(e) => {
                errln!("killpoint: {e}");
                return ExitCode::from(2);
            }
        };
        let rate = f64::from(found.runs) / found.elapsed.as_secs_f64().max(1e-9);
        outln!("{} run(s) in {:.1} s ({rate:.1}/s)", found.runs, found.elapsed.as_secs_f64());
        let failed = found.failure.is_some();
        match &found.failure {
            None => outln!("every drawn case passed"),
            Some(failure) => tell_failure(failure),
        }
        if self.records.asked() {
            let identity = super::campaign::random_identity(target, &options.run, campaign_seed, cases);
            if !self.records.write(&draws.campaign(identity, self.shard, found.failure.as_ref())) {
                return ExitCode::from(2);
            }
        }
        if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
    }
}

/// The shrunk case: its file, what it violated, how to rerun it and where its evidence is.
fn tell_failure(failure: &Failure) {
    let violated: Vec<&str> = failure.violated.iter().map(|i| i.as_str()).collect();
    outln!(
        "a case failed; shrunk to {} fault(s){}, written to {}",
        failure.fault_count(),
        if violated.is_empty() {
            " (it passed when run once more: the failure may depend on timing)".to_owned()
        } else {
            format!(", violating {}", violated.join(", "))
        },
        failure.file.display(),
    );
    match &failure.replays {
        // A run that may go otherwise (waves, a kill at after_submit): how often it came back.
        Some(replays) => outln!("{}:\n  {}", replays.told(), failure.command),
        None => outln!("rerun it with:\n  {}", failure.command),
    }
    if let Some(path) = &failure.artifacts {
        outln!("{}", crate::run::artifacts::kept_at(path));
    }
}

/// A line on stderr for a run when one is due: a drawn case's, or once a case failed, the
/// shrink's (every run after the first failure is one), which may take as long again.
fn tell(lines: &PlainLines, shrinking: &AtomicBool, cases: u32, done: RunDone) {
    if !shrinking.load(Ordering::Relaxed) {
        if lines.due(done.run as usize, cases as usize, done.failed) {
            let status = if done.failed { "FAILED: shrinking it" } else { "ok" };
            errln!("  case {}/{cases} {status}", done.run);
        }
        shrinking.store(done.failed, Ordering::Relaxed);
    } else if lines.due(0, usize::MAX, false) {
        let status = if done.failed { "still fails" } else { "passes" };
        errln!("  shrinking: run {}, the smaller case {status}", done.run);
    }
}
