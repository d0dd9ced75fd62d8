//! The plan of a workload: its record run (no kill) and the depth-1 cases found in it, without
//! running them: what the trials list.

use super::boundaries::{points, schedules};
use super::case::{Case, Workload};
use super::finding::{CaseStatus, case_status};
use super::interleaving::{Interleaving, agree};
use super::options::{ExploreOptions, Points};
use super::point::Point;
use super::prune::{Pruned, select};
use super::syscalls;
use crate::judge::Verdict;
use crate::model::boundary::Boundary;
use crate::run::built::BuiltStates;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::SyscallFault;

/// The depth-1 plan of a workload.
#[derive(Debug)]
pub struct Plan {
    pub record: Verdict,
    pub record_story: Option<String>,
    /// The record run's data dir and logs, kept when it failed.
    pub record_artifacts: Option<std::path::PathBuf>,
    pub points: usize,
    pub pruned: Vec<(Point, Pruned)>,
    pub cases: Vec<Case>,
    /// Whether every kind of point explored could be seen: the runtime spoke the probe in the
    /// record run, or the points are system calls (the tracer sees them either way).
    pub probe: bool,
    /// System-call points not run because the point before them leaves the same crash state:
    /// (the point, that earlier one).
    pub same_state: Vec<(SyscallFault, SyscallFault)>,
    /// System-call points without the probe: each boundary of the seed's table with how many of
    /// its occurrences the workload passed, every one a case hit exactly (at a system call, a
    /// held answer or the harness's client).
    pub exact: Vec<(Boundary, usize)>,
    /// With operations in flight together (boundary points): the two record runs compared.
    pub interleaving: Option<Interleaving>,
    /// Over system calls (without `--rerun-prefix`): the crash states built in the record run.
    pub built: Option<BuiltStates>,
}

/// The record run and the depth-1 cases of `workload`, without running them: what the trials list.
pub fn plan(workload: &Workload, target: &Target, options: &ExploreOptions) -> std::io::Result<Plan> {
    let syscalls = options.points == Points::Syscalls;
    let record_options = RunOptions { fingerprints: !syscalls, syscalls, ..options.run.clone() };
    // With services, a crash state is the worker's data dir and the world *and* the services'
    // state, which neither a built state nor a fingerprint holds: every case re-runs its prefix,
    // and no two cases are taken for the same state.
    let services = !options.run.services.is_empty();
    let options = &ExploreOptions {
        prune: options.prune && !services,
        rerun_prefix: options.rerun_prefix || services,
        ..options.clone()
    };
    let (verdict, run, built) = if syscalls && !options.rerun_prefix {
        super::built::record(&workload.base, target, &record_options)?
    } else {
        let (verdict, run) = crate::judge::run_scenario(&workload.base, target, &record_options)?;
        (verdict, run, None)
    };
    let failed = case_status(&verdict) == CaseStatus::Fail;
    let story = failed.then(|| crate::report::story::story(&workload.base, &verdict, &run));
    let mut exact = Vec::new();
    let mut same_state = Vec::new();
    let mut interleaving = None;
    let (points, pruned, cases, probe) = if syscalls {
        let planned = syscalls::plan(workload, &run, options.prune);
        exact = planned.exact;
        same_state = planned.same_state;
        // The tracer sees every point with or without the probe: no boundary goes unseen.
        (planned.points, Vec::new(), planned.cases, true)
    } else {
        let seen = points(&workload.base, &run, None);
        let (found, to_run, pruned) = if options.second_record && crate::search::replay::concurrent(&workload.base) {
            // Which points a record run passes, and which share a crash state, is the
            // interleaving's: a second record run says where it disagrees. Only its points are
            // used; a failure of the workload with no kill is the first run's to report.
            let (_, again) = crate::judge::run_scenario(&workload.base, target, &record_options)?;
            let again = points(&workload.base, &again, None);
            let (found, to_run, pruned, account) = agree(&workload.base, seen, again, options.prune);
            interleaving = Some(account);
            (found, to_run, pruned)
        } else {
            let found = seen.len();
            let (to_run, pruned) = select(&workload.base, seen, options.prune);
            (found, to_run, pruned)
        };
        (found, pruned, schedules(&workload.base, &to_run, run.probe), run.probe)
    };
    let (record_artifacts, story) = if failed && options.keep_failures {
        let (dir, story) =
            crate::report::evidence::keep_case(&workload.base, &verdict, story, run, target, &record_options);
        (Some(dir), story)
    } else {
        (None, story)
    };
    Ok(Plan {
        record: verdict,
        record_story: story,
        record_artifacts,
        points,
        pruned,
        same_state,
        cases,
        probe,
        exact,
        interleaving,
        built,
    })
}
