//! Cases run at once: `options.jobs` threads take the cases in order, each with its own data dir,
//! fake world and ports, and the findings come back in the cases' order.

use super::built::{Played, Shelf, for_depth_two, rerun_building, run_case_built, run_from};
use super::case::{Case, Workload};
use super::finding::{CaseStatus, Finding};
use super::options::ExploreOptions;
use crate::run::built::after_kill::{self, AfterKill};
use crate::run::built::kept;
use crate::run::built::{BuiltState, BuiltStates};
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;

/// A case run and judged, with its run when it is kept, and the crash states it built.
pub(super) type Outcome = (Finding, Option<Run>, Option<BuiltStates>);

/// Runs `cases` on `options.jobs` threads, each from its crash state on the `shelf` when it has
/// one; keeps each run only when asked (depth 2 reads them), and then, when the shelf is in use,
/// builds the states of each run's recovery for depth 2.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_all(
    workload: &Workload,
    cases: &[Case],
    shelf: Option<&Shelf>,
    target: &Target,
    options: &ExploreOptions,
    keep_runs: bool,
    progress: &(dyn Fn(&Finding, usize, usize, usize) + Sync),
    failures_so_far: usize,
) -> std::io::Result<Vec<Outcome>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let failures = AtomicUsize::new(failures_so_far);
    let done = AtomicUsize::new(0);
    let total = cases.len();
    let out: Mutex<Vec<(usize, std::io::Result<Outcome>)>> = Mutex::new(Vec::new());
    // Runs whose recoveries become depth-2 points take fingerprints, so those points can be pruned.
    // Re-run cases under the tracer take the crash state each kill leaves: a failing one keeps
    // its last beside its file, as a case from a built state keeps that.
    // With the probe, a run kept for depth 2 takes the state its kill left, where its depth-2
    // cases start (`Shelf::after_kills`, when the exploration takes them).
    let after_kills = keep_runs && !options.run.syscalls && shelf.is_some();
    let keep_kills = (options.keep_failures && options.run.syscalls) || after_kills;
    // A run kept for depth 2 over system calls gives it the points of its recovery: traced to the
    // end (with the probe its points are the probe's). Others need the tracer only until their
    // last kill.
    let untraced_after_last_kill = !keep_runs || !options.run.syscalls;
    // A state its depth-2 cases can do without (they re-run their prefix then) waits a moment,
    // not as long as a failing case's evidence: in `concurrent_wave`, a kill at `after_dispatch`
    // (the world holding one answer while other operations' requests are in flight) left one
    // request the tracer saw sent that the world never recorded, in about one exploration of two.
    let kill_lands = if after_kills { AFTER_KILL_SEED } else { options.run.kill_lands };
    let run_options =
        RunOptions { fingerprints: keep_runs, keep_kills, kill_lands, untraced_after_last_kill, ..options.run.clone() };
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(case) = cases.get(i) else { return };
                    let started = std::time::Instant::now();
                    let played = play(workload, case, target, &run_options, shelf, keep_runs);
                    let outcome = played.map(|(mut finding, mut run, states)| {
                        finding.took = started.elapsed();
                        let failed = finding.status() == CaseStatus::Fail;
                        if failed {
                            failures.fetch_add(1, Ordering::Relaxed);
                            if options.first_failure {
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        let keep = failed && options.keep_failures;
                        let run = if keep {
                            let story = finding.story.take();
                            let after_kill = run.after_kill.take();
                            let (path, mut story) = crate::report::evidence::keep_case(
                                &finding.scenario,
                                &finding.verdict,
                                story,
                                run,
                                target,
                                &run_options,
                            );
                            let state = state_of(shelf, &finding, after_kill.as_ref());
                            let (probe, crash) = (run_options.probe, run_options.crash);
                            let key = || kept::Key::of(&finding.scenario, target, probe, crash);
                            kept::keep_among(&path, state, key, &mut story);
                            (finding.artifacts, finding.story) = (Some(path), story);
                            None
                        } else if keep_runs {
                            Some(run)
                        } else {
                            None
                        };
                        // Told once kept: a failure is written with its evidence where it is.
                        let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                        progress(&finding, n, total, failures.load(Ordering::Relaxed));
                        (finding, run, states)
                    });
                    out.lock().unwrap_or_else(|p| p.into_inner()).push((i, outcome));
                }
            });
        }
    });
    let mut out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    out.sort_by_key(|(i, _)| *i);
    out.into_iter().map(|(_, r)| r).collect()
}

/// How long the state a depth-1 case's kill left waits for the world to record what was sent,
/// when it is taken for its depth-2 cases to start from.
const AFTER_KILL_SEED: std::time::Duration = std::time::Duration::from_millis(200);

/// The crash state a failing case's recovery started from: its built state, or, re-run, the one
/// its last kill left (`Err`: why that could not be taken; `None`: neither, untraced).
fn state_of<'s>(
    shelf: Option<&'s Shelf>,
    finding: &Finding,
    after_kill: Option<&'s Result<AfterKill, String>>,
) -> Option<Result<&'s BuiltState, &'s str>> {
    let case = &finding.case;
    if finding.built {
        let after_kill = shelf.and_then(|s| s.after_kill_for(case));
        let state = after_kill.or_else(|| shelf?.for_case(case)?.ready_at(case.syscalls.last()?));
        return state.map(Ok);
    }
    after_kill::state_of(after_kill)
}

/// One case: from its built state when the shelf has one, else re-run (untraced when the tracer has
/// nothing to do in it: `untraced`); building its recovery's states when its run is kept for depth
/// 2 and the shelf is in use.
fn play(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    shelf: Option<&Shelf>,
    keep_runs: bool,
) -> std::io::Result<Played> {
    if let Some(state) = shelf.and_then(|s| s.after_kill_for(case)) {
        return run_from(workload, case, target, options, state, None);
    }
    // Recoveries' states are built over system calls; with the probe the shelf holds after-kill
    // states only.
    let recording = shelf.and(for_depth_two(case)).filter(|_| keep_runs && options.syscalls);
    if let Some(played) =
        shelf.and_then(|s| s.for_case(case)).and_then(|b| run_case_built(workload, case, target, options, b, recording))
    {
        return played;
    }
    match recording {
        Some(recording) => rerun_building(workload, case, target, options, recording),
        None => super::untraced::rerun(workload, case, target, options, keep_runs),
    }
}
