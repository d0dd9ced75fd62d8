//! `killpoint explore`: the workload killed at every boundary occurrence it passes; each failure
//! written as a scenario file, then the summary of crash points found, run and pruned.

use super::campaign::Collected;
use super::progress::PlainLines;
use super::setup::{points, run_options, target};
use super::{Runtime, Usage};
use crate::run::built::kept;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::explore::{self, CaseStatus, Exploration, ExploreOptions, Finding, Points};
use crate::search::replay;
use crate::search::schedules::Budget;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How an exploration is done (`explore`, and `bench SCENARIO.toml`).
#[derive(Debug, Clone)]
pub struct Knobs {
    /// `--depth`: 2 also kills at every crash point of each kill's recovery.
    pub depth: u8,
    /// `--jobs`: cases run at once, or with `--schedules` seeds (default: twice the number of cores).
    pub jobs: Option<u32>,
    /// `--points`: the named boundaries, or the runtime's system calls.
    pub points: Points,
    /// `--rerun-prefix`: over system calls, re-run each case's prefix instead of building it.
    pub rerun_prefix: bool,
}

/// `killpoint explore`'s options.
#[derive(Debug, Clone)]
pub struct ExploreCommand {
    /// The scenario whose workload is explored.
    pub scenario: PathBuf,
    pub runtime: Runtime,
    pub knobs: Knobs,
    /// `--shard K/N`: only the cases whose names hash into shard K of N.
    pub shard: Option<(u64, u64)>,
    /// `--out`: where failing cases are written as scenario files.
    pub out: PathBuf,
    /// `--artifacts-dir`: where failing cases' run directories are kept (`None`: the temp dir).
    pub artifacts_dir: Option<PathBuf>,
    /// `--first-failure`: stop at the first failing case.
    pub first_failure: bool,
    /// `--quiet`: no progress and no stories: the summary, and where the failures are.
    pub quiet: bool,
    /// `--operations`: the scenario's workload this many times over.
    pub operations: u32,
    /// `--json`, `--junit`: every case's record, for a CI system (and `killpoint merge`).
    pub records: super::campaign::Records,
    /// `--schedules N --pct-depth D`: explore the orders the runtime's threads meet in, not crash
    /// points (seeds 1..=N at PCT depth D).
    pub schedules: Option<(u64, u32)>,
}

impl ExploreCommand {
    pub fn run(&self) -> Result<ExitCode, Usage> {
        self.records.writable()?;
        let target = target(&self.runtime)?;
        let scenario = Scenario::load(&self.scenario).map_err(|e| e.to_string())?.with_copies(self.operations);
        let mut args = self.clone();
        args.knobs.points = points(args.knobs.points, &args.runtime);
        let output = super::Output { artifacts_dir: self.artifacts_dir.clone(), ..super::Output::default() };
        let run = RunOptions { artifacts_root: super::setup::artifacts_root(&output)?, ..run_options(&args.runtime) };
        if let Some((seeds, depth)) = self.schedules {
            let jobs = self.knobs.jobs.map_or(crate::search::explore::default_jobs(), |j| j as usize);
            let budget = Budget { seeds, depth, first_failure: self.first_failure, keep_failures: true, jobs };
            let told = super::schedules::Told { out: &self.out, quiet: self.quiet };
            return Ok(super::schedules::explore(told, &scenario, &target, run, budget));
        }
        Ok(args.explore(&scenario, &target, run))
    }

    fn explore(&self, scenario: &Scenario, target: &Target, run: RunOptions) -> ExitCode {
        let options = self.options(run);
        // A failing case is replayed as it was explored: under the tracer with `--points syscalls`.
        let replay = RunOptions { syscalls: options.points == Points::Syscalls, ..options.run.clone() };
        let workload = explore::Workload::of(scenario);
        outln!(
            "exploring `{}` ({} operation(s)) against {} at depth {}: {} hand-placed kill(s) dropped, {} world fault(s) kept",
            scenario.name,
            scenario.operations.len(),
            target.program.display(),
            options.depth,
            workload.dropped,
            workload.kept
        );
        let bar = progress_bar(self.quiet);
        let plain = (!self.quiet && bar.is_hidden()).then(PlainLines::new);
        if plain.is_some() {
            errln!("{}", super::progress::RULE);
        }
        let started = Instant::now();
        // Each failure is written as it is found: an exploration interrupted or stopped later
        // keeps it. Where it went is said in the report at the end.
        let written = Mutex::new(Written::new());
        let collected = Collected::default();
        let progress = |finding: &Finding, done: usize, total: usize, failures: usize| {
            if self.records.asked() {
                collected.add(finding, &self.out);
            }
            if finding.status() == CaseStatus::Fail {
                let at = write_case(&self.out, finding, target, &replay);
                written.lock().unwrap_or_else(|e| e.into_inner()).insert(finding.case.name(), at);
            }
            show_progress(&bar, plain.as_ref(), finding, done, total, failures);
        };
        let result = match explore::explore(scenario, target, &options, &progress) {
            Ok(r) => r,
            Err(e) => {
                errln!("killpoint: the exploration could not run: {e}");
                return ExitCode::from(2);
            }
        };
        bar.finish_and_clear();
        let elapsed = started.elapsed();
        let written = written.into_inner().unwrap_or_else(|e| e.into_inner());
        let failed = self.report_failures(&result, target, &replay, written);
        print_summary(&result, elapsed);
        if self.records.asked() {
            let identity = super::campaign::identity(scenario, target, &options);
            if !self.records.write(&collected.campaign(identity, self.shard, &result.failures)) {
                return ExitCode::from(2);
            }
        }
        if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
    }

    fn options(&self, run: RunOptions) -> ExploreOptions {
        ExploreOptions {
            depth: self.knobs.depth,
            run,
            jobs: self.knobs.jobs.map_or(crate::search::explore::default_jobs(), |j| j as usize),
            shard: self.shard,
            first_failure: self.first_failure,
            // Shards list the cases each on its own machine: unpruned, they all list the same ones,
            // so together they run every case exactly once.
            prune: self.shard.is_none(),
            keep_failures: true,
            points: self.knobs.points,
            second_record: true,
            rerun_prefix: self.knobs.rerun_prefix,
        }
    }

    /// On stderr, each failure's story, the file it was written to (`written`, by case name) and
    /// its kept artifacts; returns whether there was one.
    fn report_failures(
        &self,
        result: &Exploration,
        target: &Target,
        replay: &RunOptions,
        mut written: Written,
    ) -> bool {
        if self.quiet {
            return self.report_failures_quietly(result, target, replay, written);
        }
        let mut failed = false;
        let until = Instant::now() + replay::BUDGET;
        for finding in &result.failures {
            failed = true;
            if let Some(story) = &finding.story {
                errln!("{story}");
            }
            let at =
                written.remove(&finding.case.name()).unwrap_or_else(|| write_case(&self.out, finding, target, replay));
            match at {
                Ok((path, command)) => {
                    errln!(
                        "  written to {}\n  {}: {command}",
                        path.display(),
                        replayed(finding, target, replay, until)
                    );
                }
                Err(e) => errln!("killpoint: cannot write the failing case to {}: {e}", self.out.display()),
            }
            if let Some(path) = &finding.artifacts {
                errln!("  {}\n", crate::run::artifacts::kept_at(path));
            }
        }
        failed
    }
}

impl ExploreCommand {
    /// `--quiet`'s account of the failures: how many, and where they are written and kept, in
    /// two lines however many there are (each case's story is in its `report.html`). Cases not
    /// written yet are written now; one that cannot be is said.
    fn report_failures_quietly(
        &self,
        result: &Exploration,
        target: &Target,
        replay: &RunOptions,
        mut written: Written,
    ) -> bool {
        let mut kept = BTreeSet::new();
        for finding in &result.failures {
            let at =
                written.remove(&finding.case.name()).unwrap_or_else(|| write_case(&self.out, finding, target, replay));
            if let Err(e) = at {
                errln!(
                    "killpoint: cannot write the failing case {} to {}: {e}",
                    finding.case.name(),
                    self.out.display()
                );
            }
            kept.extend(finding.artifacts.as_ref().and_then(|p| p.parent()).map(Path::to_path_buf));
        }
        if result.failures.is_empty() {
            return false;
        }
        let kept: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
        // The mode a case ran in is not in its file (`--crash machine`, `--points syscalls`, the
        // runtime's arguments): the command says it.
        let command = crate::search::random::rerun_command(Path::new("FILE"), target, replay);
        errln!(
            "{} failing case(s) written to {} (one scenario file each: `{command}` reruns one)",
            result.failures.len(),
            self.out.display()
        );
        errln!("their artifacts (report.html with the story, rerun.sh) are kept in {}", kept.join(", "));
        true
    }
}

/// How a failing case's replay line begins: `reproduce` when it runs the same way each time; when
/// it may not ([`replay::timing_dependent`]: operations in flight together, a kill at
/// `after_submit`), how often it came back in [`replay::REPLAYS`] replays (run now, before `until`).
/// A case that ran from a built crash state is replayed from it, as its file is (kept beside it).
fn replayed(finding: &Finding, target: &Target, options: &RunOptions, until: Instant) -> String {
    if !replay::timing_dependent(&finding.scenario) {
        return "reproduce".to_owned();
    }
    let found = finding.verdict.failed_invariants();
    let state = finding.artifacts.as_ref().map(|a| a.join(kept::IN_ARTIFACTS));
    let from_kept = state.and_then(|dir| {
        kept::find_in(dir, &kept::Key::of(&finding.scenario, target, options.probe, options.crash)).usable()
    });
    let options = RunOptions { from_kept, ..options.clone() };
    replay::replay(&finding.scenario, target, &options, &found, (replay::REPLAYS, until), &mut |_, _| {}).told()
}

/// A bar on a terminal; plain lines ([`PlainLines`]) when piped, as in CI.
fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet {
        ProgressBar::hidden()
    } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} crash points, {msg}, ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    } else {
        ProgressBar::hidden()
    }
}

/// One case done: the bar moved, or with `plain`, a line when one is due.
fn show_progress(
    bar: &ProgressBar,
    plain: Option<&PlainLines>,
    finding: &Finding,
    done: usize,
    total: usize,
    failures: usize,
) {
    bar.set_length(total as u64);
    bar.set_position(done as u64);
    bar.set_message(format!("{failures} failure(s)"));
    let failed = finding.status() == CaseStatus::Fail;
    if plain.is_some_and(|lines| lines.due(done, total, failed)) {
        let status = if failed { "FAILED" } else { "ok" };
        errln!("  {done}/{total} {} {status} ({failures} failure(s) so far)", finding.case.name());
    }
}

/// On stdout, the crash points found, the cases run and why the others were pruned.
fn print_summary(result: &Exploration, elapsed: Duration) {
    let ran: usize = result.cases_run();
    let found: Vec<String> = result.points.iter().enumerate().map(|(d, n)| format!("{n} at depth {}", d + 1)).collect();
    outln!(
        "crash points found: {}; cases run: {ran} ({} passed, {} partial, {} not reached, {} failed) in {:.1} s ({:.1} cases/s); pruned: {}{}",
        found.join(", "),
        result.passed,
        result.partial,
        result.not_reached,
        result.failures.len(),
        elapsed.as_secs_f64(),
        ran as f64 / elapsed.as_secs_f64().max(1e-9),
        result.pruned.len() + result.same_state.len(),
        if result.other_shards > 0 {
            // Depth-2 cases go with their depth-1 case: this shard never sees the others'.
            let deeper = if result.ran.len() > 1 { " (and their depth-2 cases)" } else { "" };
            format!("; {} case(s) in other shards{deeper}", result.other_shards)
        } else {
            String::new()
        }
    );
    if result.from_built > 0 {
        outln!(
            "  from built crash states: {} case(s), one recovery each (the others re-ran their prefix)",
            result.from_built
        );
    }
    if !result.unbuilt.is_empty() {
        let why: Vec<String> = result.unbuilt.iter().map(|(reason, n)| format!("{reason} ×{n}")).collect();
        outln!("  re-run, their state not built faithfully: {}", why.join(", "));
    }
    print_pruned(result);
}

/// The summary's indented lines: what was pruned and why, and what the probe-less run saw.
fn print_pruned(result: &Exploration) {
    for (why, n) in explore::pruned_summary(&result.pruned) {
        outln!("  pruned {n}: {why}");
    }
    if !result.same_state.is_empty() {
        outln!(
            "  pruned {}: system calls that leave the same disk and world as the point before (no durable change, no send in between)",
            result.same_state.len()
        );
    }
    if !result.exact.is_empty() {
        let hit: Vec<String> = result.exact.iter().map(|(b, n)| format!("{b} ×{n}")).collect();
        outln!("  boundaries hit exactly without the probe: {}", hit.join(", "));
    }
    if !result.unseen.is_empty() {
        let names: Vec<&str> = result.unseen.iter().map(|b| b.as_str()).collect();
        outln!("  not explored without the probe (the fake world cannot see them): {}", names.join(", "));
    }
    if let Some(account) = &result.interleaving {
        outln!("  {}", interleaving(account));
    }
}

/// The summary's line for operations in flight together: which points depend on how they
/// interleave, and how many runs covered them.
fn interleaving(account: &explore::Interleaving) -> String {
    let mut line = format!(
        "operations in flight together: depth 1 from {} record runs, {} point(s) seen in only some of them, {} pruned in only some (run)",
        account.records, account.seen_in_some, account.pruned_in_some
    );
    if account.recoveries > 0 {
        line.push_str(&format!(
            "; depth 2 from one run of each of {} depth-1 case(s): {} point(s) of the killed operation's own recovery, {} of operations beside it, {} pruned for that one run's crash states (where the operations beside it were at the kill, and which points share a crash state, vary from run to run)",
            account.recoveries, account.own, account.beside, account.pruned_once
        ));
    }
    line
}

/// The failing cases written so far, by case name: the file and the command that replays it.
type Written = BTreeMap<String, std::io::Result<(PathBuf, String)>>;

/// Writes a failing case as a scenario file; returns its path and the command that replays it.
/// The file appears whole (written aside, then renamed), so whoever watches the directory never
/// reads half of one.
fn write_case(
    dir: &Path,
    finding: &Finding,
    target: &Target,
    replay: &RunOptions,
) -> std::io::Result<(PathBuf, String)> {
    let mut scenario = finding.scenario.clone();
    let broken: Vec<&str> = finding.verdict.failed_invariants().iter().map(|i| i.as_str()).collect();
    scenario.description = format!(
        "Found by `killpoint explore`: the workload of `{}` with the kill schedule {}, violated {}.\n\n{}",
        finding.scenario.name.split('.').next().unwrap_or_default(),
        finding.case.name(),
        broken.join(", "),
        scenario.description
    );
    let path = dir.join(format!("{}.toml", scenario.name));
    scenario.write_whole(&path)?;
    kept::put_beside(finding.artifacts.as_deref(), &path)?;
    let command = crate::search::random::rerun_command(&path, target, replay);
    Ok((path, command))
}
