//! `killpoint bench`: the matrix N times (pass counts, timings, the certification overhead), or
//! with a scenario file, its workload explored N times (crash points per second).

use super::explore::Knobs;
use super::setup::{points, run_options, scenarios, target, traced_options};
use super::stats::{ms, stats};
use super::{Runtime, Selection, Usage};
use crate::judge::run_scenario;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::explore::{self, ExploreOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// `killpoint bench`'s options.
#[derive(Debug, Clone)]
pub struct BenchCommand {
    /// Explore this scenario's workload instead of running the matrix.
    pub scenario: Option<PathBuf>,
    /// `--runs`: how many times.
    pub runs: u32,
    pub runtime: Runtime,
    pub select: Selection,
    /// `--operations`: each scenario's workload this many times over.
    pub operations: u32,
    pub explore: Knobs,
}

impl BenchCommand {
    pub fn run(&self) -> Result<ExitCode, Usage> {
        let target = target(&self.runtime)?;
        let mut args = self.clone();
        args.explore.points = points(args.explore.points, &args.runtime);
        match &args.scenario {
            Some(path) => {
                let scenario = Scenario::load(path).map_err(|e| e.to_string())?.with_copies(args.operations);
                Ok(args.bench_explore(&scenario, &target, run_options(&args.runtime)))
            }
            None => {
                let options = traced_options(&args.runtime, args.explore.points);
                let (scenarios, no_services) =
                    super::certify::with_services(scenarios(&args.select, args.operations)?, &options.services);
                if let Some(note) = no_services {
                    outln!("{note}");
                }
                Ok(bench(&scenarios, &target, &options, args.runs))
            }
        }
    }

    /// Explores one workload `--runs` times: crash points per second and the recovery figures.
    fn bench_explore(&self, scenario: &Scenario, target: &Target, run: RunOptions) -> ExitCode {
        let options = ExploreOptions {
            depth: self.explore.depth,
            run,
            jobs: self.explore.jobs.map_or(crate::search::explore::default_jobs(), |j| j as usize),
            shard: None,
            first_failure: false,
            prune: true,
            keep_failures: false,
            points: self.explore.points,
            second_record: true,
            rerun_prefix: self.explore.rerun_prefix,
        };
        outln!(
            "bench: explore `{}` {} time(s) at depth {} with {} job(s) against {}",
            scenario.name,
            self.runs,
            options.depth,
            options.jobs,
            target.program.display()
        );
        let mut rates = Vec::new();
        let mut failed = false;
        // Where cases run from crash states (over system calls; with the probe at depth 2, from
        // the state each first kill left), each run also explores with `--rerun-prefix` right
        // after, under the same load: the ratio of the two is measured within one run, and every
        // case's verdict compared.
        let from_states = options.points == explore::Points::Syscalls || explore::after_kills_wanted(&options);
        let compare = from_states && !options.rerun_prefix;
        for i in 1..=self.runs {
            let once = if compare {
                agree_once(scenario, target, &options, i)
            } else {
                explore_once(scenario, target, &options, i, "")
            };
            let Some((rate, fails)) = once else { return ExitCode::from(2) };
            failed |= fails;
            rates.push(rate);
        }
        print_rates(&mut rates);
        // One certification of the workload as written, for the recovery figures: traced when the
        // points are system calls, so that a black box is killed at every boundary too.
        let certified = RunOptions { syscalls: options.points == explore::Points::Syscalls, ..options.run.clone() };
        recovery_figures(scenario, target, &certified, self.runs);
        if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
    }
}

/// One exploration, its line, its rate (cases per second) and whether a case failed; `None` when
/// it could not run (said on stderr).
fn explore_once(
    scenario: &Scenario,
    target: &Target,
    options: &ExploreOptions,
    i: u32,
    how: &str,
) -> Option<(f64, bool)> {
    let explored = match explore::agreement::explored(scenario, target, options) {
        Ok(e) => e,
        Err(e) => {
            errln!("killpoint: the exploration could not run: {e}");
            return None;
        }
    };
    print_explored(&explored, i, how);
    Some((explored.rate(), !explored.exploration.failures.is_empty()))
}

/// One exploration from built states and one with `--rerun-prefix` right after, their lines, the
/// ratio of their rates and every case whose verdicts differ (a disagreement fails the bench).
fn agree_once(scenario: &Scenario, target: &Target, options: &ExploreOptions, i: u32) -> Option<(f64, bool)> {
    let agreement = match explore::agreement::agreement(scenario, target, options) {
        Ok(a) => a,
        Err(e) => {
            errln!("killpoint: the exploration could not run: {e}");
            return None;
        }
    };
    print_explored(&agreement.built, i, "");
    print_explored(&agreement.rerun, i, " --rerun-prefix");
    let (built, rerun) = (agreement.built.rate(), agreement.rerun.rate());
    outln!(
        "  run {i:>3}: built / re-run = {:.2}x the cases per second; verdicts differ on {} case(s), {} unsteady when re-run, {} found or reached one way only",
        built / rerun.max(1e-9),
        agreement.apart.differ.len(),
        agreement.apart.unsteady.len(),
        agreement.apart.unmatched.len()
    );
    for line in &agreement.apart.differ {
        outln!("    differ: {line}");
    }
    for line in &agreement.apart.unsteady {
        outln!("    unsteady re-run: {line}");
    }
    let fails = !agreement.built.exploration.failures.is_empty() || !agreement.apart.differ.is_empty();
    Some((built, fails))
}

fn print_explored(explored: &explore::agreement::Explored, i: u32, how: &str) {
    let result = &explored.exploration;
    let ran: usize = result.cases_run();
    outln!(
        "  run {i:>3}{how}: {ran} crash point(s) in {:.1} ms = {:.1}/s ({} failed, {} pruned, {} from built states)",
        ms(explored.elapsed),
        explored.rate(),
        result.failures.len(),
        result.pruned.len() + result.same_state.len(),
        result.from_built
    );
}

fn print_rates(rates: &mut [f64]) {
    rates.sort_by(f64::total_cmp);
    outln!(
        "crash points per second:        median {:.1} (min {:.1}, max {:.1})",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
}

/// `runs` certifications of `scenario`: kill → restarted and kill → recovered.
fn recovery_figures(scenario: &Scenario, target: &Target, certified: &RunOptions, runs: u32) {
    let mut restarts = Vec::new();
    let mut recoveries = Vec::new();
    for _ in 0..runs {
        if let Ok((_, r)) = run_scenario(scenario, target, certified) {
            restarts.extend(r.restarts.iter().copied());
            recoveries.extend(r.recoveries.iter().copied());
        }
    }
    outln!("kill -> restarted (ready):      {}", stats(&mut restarts));
    outln!("kill -> restarted -> recovered: {}", stats(&mut recoveries));
}

/// What the matrix's runs measured: each suite's wall time, every restart and recovery, and what
/// failed.
#[derive(Default)]
struct Samples {
    suites: Vec<Duration>,
    restarts: Vec<Duration>,
    recoveries: Vec<Duration>,
    failures: Vec<String>,
    clean_suites: u32,
}

impl Samples {
    /// Run `i` of the matrix, and its line.
    fn suite(&mut self, i: u32, scenarios: &[Scenario], target: &Target, options: &RunOptions) {
        let started = Instant::now();
        let mut clean = true;
        for scenario in scenarios {
            match run_scenario(scenario, target, options) {
                Ok((verdict, run)) => {
                    self.restarts.extend(run.restarts.iter().copied());
                    self.recoveries.extend(run.recoveries.iter().copied());
                    if !verdict.passed() {
                        clean = false;
                        let kept = run.keep_artifacts();
                        let broken: Vec<&str> = verdict.failed_invariants().iter().map(|i| i.as_str()).collect();
                        self.failures.push(format!(
                            "run {i}: {} violated {broken:?}; artifacts at {}",
                            scenario.name,
                            kept.display()
                        ));
                    }
                }
                Err(e) => {
                    clean = false;
                    self.failures.push(format!("run {i}: {} could not run: {e}", scenario.name));
                }
            }
        }
        self.suites.push(started.elapsed());
        self.clean_suites += u32::from(clean);
        let last = self.suites[self.suites.len() - 1];
        outln!("  run {i:>3}: {:>7.1} ms{}", ms(last), if clean { "" } else { "  FAILED" });
    }

    /// The timing lines and the failures, after the overheads.
    fn print(mut self) -> ExitCode {
        outln!("suite wall time:                {}", stats(&mut self.suites));
        outln!("kill -> restarted (ready):      {}", stats(&mut self.restarts));
        outln!("kill -> restarted -> recovered: {}", stats(&mut self.recoveries));
        for f in &self.failures {
            outln!("  {f}");
        }
        if self.failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
    }
}

fn bench(scenarios: &[Scenario], target: &Target, options: &RunOptions, runs: u32) -> ExitCode {
    outln!("bench: {runs} run(s) of {} scenario(s) against {}", scenarios.len(), target.program.display());
    let mut samples = Samples::default();
    for i in 1..=runs {
        samples.suite(i, scenarios, target, options);
    }
    // The price of certification: the same workloads with no fault of any kind (no kill, no
    // freeze, a world that answers every request at once and truly), one run each way. Only the
    // time is compared; the fault-free runs are not judged.
    let plain = without_faults(scenarios);
    let (with_faults, without) = (timed(target, scenarios, options), timed(target, &plain, options));
    outln!("\n{} passed, {} failed", samples.clean_suites, runs - samples.clean_suites);
    outln!(
        "certification overhead:         {:.2} (certify {:.1} ms / the same workloads without faults {:.1} ms, one run each)",
        with_faults.as_secs_f64() / without.as_secs_f64().max(1e-9),
        ms(with_faults),
        ms(without)
    );
    if options.syscalls {
        tracing_overhead(scenarios, target, options);
    }
    samples.print()
}

/// The scenarios with no kill, no freeze, and a world that answers every request at once and truly.
fn without_faults(scenarios: &[Scenario]) -> Vec<Scenario> {
    scenarios
        .iter()
        .map(|s| {
            let mut plain = s.clone();
            plain.faults.clear();
            plain.lookup_faults.clear();
            plain.model_faults.clear();
            plain.policy_faults.clear();
            plain.consumer_faults.clear();
            plain
        })
        .collect()
}

/// One run of each scenario of `list`, unjudged: how long they took together.
fn timed(target: &Target, list: &[Scenario], options: &RunOptions) -> Duration {
    let started = Instant::now();
    for scenario in list {
        let _ = run_scenario(scenario, target, options);
    }
    started.elapsed()
}

/// The price of tracing: the same workloads, faults and all, untraced, one run each way.
fn tracing_overhead(scenarios: &[Scenario], target: &Target, options: &RunOptions) {
    let untraced = RunOptions { syscalls: false, ..options.clone() };
    let (traced, plain) = (timed(target, scenarios, options), timed(target, scenarios, &untraced));
    outln!(
        "tracing overhead:               {:.2} (traced {:.1} ms / untraced {:.1} ms, one run each)",
        traced.as_secs_f64() / plain.as_secs_f64().max(1e-9),
        ms(traced),
        ms(plain)
    );
}
