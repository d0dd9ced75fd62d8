//! `killpoint random`: drawn workloads and fault schedules; the first that fails is shrunk and
//! written as a scenario file.

use super::progress::PlainLines;
use super::setup::{run_options, target};
use super::{Runtime, Usage};
use crate::run::incarnation::Target;
use crate::search::random::{self, RandomOptions, RunDone};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// `killpoint random`: `cases` schedules drawn from `seed` (default: a new one), the shrunk
/// failing case written under `out`.
pub fn random(runtime: &Runtime, cases: u32, seed: Option<u64>, out: &Path) -> Result<ExitCode, Usage> {
    let target = target(runtime)?;
    Ok(search(&target, runtime, cases, seed, out))
}

/// Exit 1 with the shrunk case's file and rerun command when a case fails.
fn search(target: &Target, runtime: &Runtime, cases: u32, seed: Option<u64>, out: &Path) -> ExitCode {
    let seed = seed.unwrap_or_else(random::new_seed);
    let options = RandomOptions {
        cases,
        seed,
        out: out.to_path_buf(),
        max_shrink_iters: 64,
        waves: true,
        run: run_options(runtime),
    };
    outln!("random: {} case(s) against {}, seed {seed} (replay with --seed {seed})", cases, target.program.display());
    errln!("{}", super::progress::RULE);
    let lines = PlainLines::new();
    let shrinking = AtomicBool::new(false);
    let tell = |done: RunDone| tell(&lines, &shrinking, cases, done);
    let found = match random::search_telling(target, &options, &tell) {
        Ok(f) => f,
        Err(e) => {
            errln!("killpoint: {e}");
            return ExitCode::from(2);
        }
    };
    let rate = f64::from(found.runs) / found.elapsed.as_secs_f64().max(1e-9);
    outln!("{} run(s) in {:.1} s ({rate:.1}/s)", found.runs, found.elapsed.as_secs_f64());
    match found.failure {
        None => {
            outln!("every drawn case passed");
            ExitCode::SUCCESS
        }
        Some(failure) => {
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
            ExitCode::FAILURE
        }
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
