//! The `killpoint` command line.
//!
//! ```text
//! killpoint certify [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint run SCENARIO.toml [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint bench [--runs N] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint explore SCENARIO.toml [--depth 1|2] [--jobs N] [--shard K/N] [--out DIR] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint random [--cases N] [--seed S] [--out DIR] [OPTIONS] [-- RUNTIME_ARGS…]
//! ```
//! `certify` runs every scenario against the runtime and prints the scenario × verdict ×
//! invariants table; it exits 0 only if every scenario passes. `bench` runs the whole matrix N
//! times and reports pass counts and timings (suite wall time, kill → restarted, kill →
//! recovered): the speed figures live here, not in timed tests.

use killpoint::certificate::{self, Certificate};
use killpoint::{RunOptions, Scenario, Target, Verdict, report, run_scenario};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage:
  killpoint certify [OPTIONS] [-- RUNTIME_ARGS…]        every scenario; the scenario and boundary × tool kind tables
  killpoint run SCENARIO.toml [OPTIONS] [-- RUNTIME_ARGS…]  one scenario
  killpoint bench [--runs N] [OPTIONS] [-- RUNTIME_ARGS…]   the matrix N times (default 10): pass counts and timings,
                      and the certification overhead (certify ÷ the same workloads without faults)
  killpoint bench SCENARIO.toml [--runs N] [--depth 1|2] [--jobs N] [-- RUNTIME_ARGS…]
                      explore the workload N times: crash points per second, kill -> recovered
  killpoint explore SCENARIO.toml [OPTIONS] [-- RUNTIME_ARGS…]
                      kill the workload at every boundary occurrence it passes (its hand-placed kills
                      are dropped, its world faults kept); each failure is written as a scenario file
  killpoint random [--cases N] [--seed S] [--out DIR] [OPTIONS] [-- RUNTIME_ARGS…]
                      N drawn workloads and fault schedules (default 100, from seed S, default a new
                      one); the first that fails is shrunk and written to DIR as a scenario file

options:
  --runtime PATH      the runtime to certify (default: killpoint-runtime built beside this binary)
  --scenarios DIR     the scenario directory (default: ./scenarios)
  --filter TEXT       only scenarios whose name contains TEXT
  --operations N      run each scenario's workload N times over (default 1)
  --no-probe          certify as a black box: no KILLPOINT_PROBE_SOCKET
  --keep-artifacts    keep every data dir and log, not only those of failures
  --json PATH         write the JSON certificate (docs/report.md) to PATH
  --junit PATH        write JUnit XML to PATH
  --html PATH         write the HTML report (matrix, each scenario's timeline) to PATH
  --artifacts-dir DIR where run directories are made (default: the temp dir); failures keep theirs
  --jobs N            scenarios (certify) or cases (explore) run at once (default: the number of cores)

explore options:
  --depth 1|2         2: also kill at every boundary occurrence of each kill's recovery (default 1)
  --shard K/N         only the cases whose names hash into shard K of N (a stable hash, like
                      `cargo nextest run --partition hash:K/N` for the trials); unpruned, so the
                      N shards together run every case exactly once
  --out DIR           where failing cases are written as scenario files (default ./killpoint-found)
  --points boundaries|syscalls
                      where the crash points are: every named boundary occurrence (default), or
                      every sync, rename, unlink, request and answer of the runtime's system calls
                      (Linux x86_64, through killpoint-tracer: no probe needed; depth 1 only)
  --first-failure     stop at the first failing case
  --quiet             no progress, only the summary

random options (--out as for explore):
  --cases N           schedules to draw (default 100)
  --seed S            the search's seed: the same seed draws and shrinks the same cases

exit status: 0 when no scenario failed, 1 when one did, 2 for a usage or scenario-file error.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Command {
    Certify,
    Run,
    Bench,
    Random,
    Explore,
}

struct Args {
    command: Command,
    scenario: Option<PathBuf>,
    runtime: Option<PathBuf>,
    scenarios: PathBuf,
    filter: Option<String>,
    keep: bool,
    runs: u32,
    copies: u32,
    probe: bool,
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
    runtime_args: Vec<String>,
    cases: u32,
    seed: Option<u64>,
    depth: u8,
    jobs: Option<usize>,
    shard: Option<(u64, u64)>,
    out: PathBuf,
    first_failure: bool,
    quiet: bool,
    points: killpoint::explore::Points,
    report: killpoint::artifacts::ReportOptions,
}

fn parse(mut raw: impl Iterator<Item = String>) -> Result<Args, String> {
    let command = match raw.next().as_deref() {
        Some("certify") => Command::Certify,
        Some("run") => Command::Run,
        Some("bench") => Command::Bench,
        Some("random") => Command::Random,
        Some("explore") => Command::Explore,
        Some("-h" | "--help") => return Err(String::new()),
        Some(other) => {
            return Err(format!(
                "unknown command `{other}`; expected `certify`, `run`, `bench`, `explore` or `random`"
            ));
        }
        None => return Err("expected a command: `certify`, `run`, `bench`, `explore` or `random`".into()),
    };
    let mut args = Args {
        command,
        scenario: None,
        runtime: None,
        scenarios: PathBuf::from("scenarios"),
        filter: None,
        keep: false,
        runs: 10,
        copies: 1,
        probe: true,
        json: None,
        junit: None,
        runtime_args: Vec::new(),
        cases: 100,
        seed: None,
        depth: 1,
        jobs: None,
        shard: None,
        out: PathBuf::from("killpoint-found"),
        first_failure: false,
        quiet: false,
        points: killpoint::explore::Points::Boundaries,
        report: Default::default(),
    };
    while let Some(arg) = raw.next() {
        let mut value = |flag: &str| raw.next().ok_or(format!("{flag} expects a value"));
        match arg.as_str() {
            "--runtime" => args.runtime = Some(value("--runtime")?.into()),
            "--scenarios" => args.scenarios = value("--scenarios")?.into(),
            "--filter" => args.filter = Some(value("--filter")?),
            "--keep-artifacts" => args.keep = true,
            "--runs" => args.runs = positive("--runs", value("--runs")?)?,
            "--operations" => args.copies = positive("--operations", value("--operations")?)?,
            "--no-probe" => args.probe = false,
            "--json" => args.json = Some(value("--json")?.into()),
            "--junit" => args.junit = Some(value("--junit")?.into()),
            "--html" => args.report.html = Some(value("--html")?.into()),
            "--artifacts-dir" => args.report.artifacts_dir = Some(value("--artifacts-dir")?.into()),
            "--cases" if command == Command::Random => args.cases = positive("--cases", value("--cases")?)?,
            "--seed" if command == Command::Random => {
                let seed = value("--seed")?;
                args.seed = Some(seed.parse().map_err(|_| format!("--seed expects a number, found `{seed}`"))?);
            }
            "--depth" => {
                args.depth = match value("--depth")?.as_str() {
                    "1" => 1,
                    "2" => 2,
                    other => return Err(format!("--depth expects 1 or 2, found `{other}`")),
                }
            }
            "--jobs" => args.jobs = Some(positive("--jobs", value("--jobs")?)? as usize),
            "--shard" => args.shard = Some(shard(&value("--shard")?)?),
            "--out" => args.out = value("--out")?.into(),
            "--first-failure" => args.first_failure = true,
            "--points" => {
                args.points = match value("--points")?.as_str() {
                    "boundaries" => killpoint::explore::Points::Boundaries,
                    "syscalls" => killpoint::explore::Points::Syscalls,
                    other => return Err(format!("--points expects `boundaries` or `syscalls`, found `{other}`")),
                }
            }
            "--quiet" => args.quiet = true,
            "--" => args.runtime_args = raw.by_ref().collect(),
            "-h" | "--help" => return Err(String::new()),
            other
                if matches!(command, Command::Run | Command::Explore | Command::Bench)
                    && args.scenario.is_none()
                    && !other.starts_with('-') =>
            {
                args.scenario = Some(other.into());
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if command == Command::Run && args.scenario.is_none() {
        return Err("`run` expects a scenario file".into());
    }
    if command == Command::Explore && args.scenario.is_none() {
        return Err("`explore` expects a scenario file: its workload is explored".into());
    }
    Ok(args)
}

/// `K/N` with 1 <= K <= N.
fn shard(value: &str) -> Result<(u64, u64), String> {
    let parsed = value.split_once('/').and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    parsed
        .filter(|&(k, n)| k >= 1 && k <= n)
        .ok_or(format!("--shard expects K/N with 1 <= K <= N (e.g. 1/2), found `{value}`"))
}

fn positive(flag: &str, value: String) -> Result<u32, String> {
    value.parse().ok().filter(|n| *n > 0).ok_or(format!("{flag} expects a positive number, found `{value}`"))
}

/// Ctrl-C (or SIGTERM) mid-run: say where the unfinished run's data dir and logs are, then exit.
/// The runtime dies with this process (PDEATHSIG), and the watchdog sweeps what it started.
/// The signals are blocked before any other thread exists, so only this thread receives them.
fn on_interrupt() {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), None).is_err() {
        return; // default handling: the process dies, the runtime with it
    }
    std::thread::spawn(move || {
        let signal = signals.wait().unwrap_or(Signal::SIGINT);
        for path in killpoint::artifacts::live() {
            eprintln!(
                "\nkillpoint: interrupted ({signal}); the unfinished run's data dir and logs are kept at {}",
                path.display()
            );
        }
        std::process::exit(130);
    });
}

fn main() -> ExitCode {
    on_interrupt();
    let args = match parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("killpoint: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let Some(program) = args.runtime.clone().or_else(killpoint::reference_runtime) else {
        eprintln!(
            "killpoint: no --runtime given and no reference runtime beside this binary; build it with `cargo build --workspace`"
        );
        return ExitCode::from(2);
    };
    if !program.is_file() {
        eprintln!("killpoint: the runtime `{}` does not exist or is not a file", program.display());
        return ExitCode::from(2);
    }
    let target = Target { program, args: args.runtime_args.clone() };
    if args.command == Command::Random {
        return random(&target, &args);
    }

    let loaded: Vec<Result<Scenario, String>> = match &args.scenario {
        Some(path) => vec![Scenario::load(path).map_err(|e| e.to_string())],
        None => match Scenario::load_dir(&args.scenarios) {
            Ok(all) => all.into_iter().map(|s| s.map_err(|e| e.to_string())).collect(),
            Err(e) => {
                eprintln!("killpoint: cannot read {}: {e}", args.scenarios.display());
                return ExitCode::from(2);
            }
        },
    };
    let mut scenarios = Vec::new();
    for s in loaded {
        match s {
            Ok(s) if args.filter.as_ref().is_none_or(|f| s.name.contains(f.as_str())) => {
                scenarios.push(s.with_copies(args.copies))
            }
            Ok(_) => {}
            Err(e) => {
                // A scenario that cannot be read is a failed certification, not a skipped one.
                eprintln!("killpoint: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if scenarios.is_empty() {
        eprintln!("killpoint: no scenario to run (directory {}, filter {:?})", args.scenarios.display(), args.filter);
        return ExitCode::from(2);
    }
    let options =
        RunOptions { probe: args.probe, artifacts_root: args.report.artifacts_dir.clone(), ..RunOptions::default() };
    match args.command {
        Command::Certify | Command::Run => certify(&scenarios, &target, &options, &args),
        Command::Bench if args.scenario.is_some() => bench_explore(&scenarios[0], &target, options, &args),
        Command::Bench => bench(&scenarios, &target, &options, args.runs),
        Command::Random => unreachable!("`random` draws its own scenarios and returns before the directory is read"),
        Command::Explore => explore(&scenarios[0], &target, options, &args),
    }
}

fn certify(scenarios: &[Scenario], target: &Target, options: &RunOptions, args: &Args) -> ExitCode {
    println!("certifying {} against {} scenario(s)\n", target.program.display(), scenarios.len());
    let jobs = args.jobs.unwrap_or(killpoint::explore::ExploreOptions::default().jobs);
    let outcomes = certificate::certify(scenarios, target, options, args.keep, jobs);
    for o in &outcomes {
        if let Some(story) = &o.story {
            eprintln!("{story}");
        }
        if let Some(path) = &o.artifacts {
            eprintln!("{}: {}", o.name, killpoint::artifacts::kept_at(path));
        }
        if let Some(rerun) = &o.rerun {
            eprintln!("{}: rerun exactly this case with: {}\n", o.name, rerun.display());
        }
    }
    let rows: Vec<(String, Result<Verdict, String>)> =
        outcomes.iter().map(|o| (o.name.clone(), o.verdict.clone())).collect();
    print!("{}", report::table(&rows));
    let verdicts: Vec<&Verdict> = outcomes.iter().filter_map(|o| o.verdict.as_ref().ok()).collect();
    println!("\n{}", report::matrix_table(&report::matrix(&verdicts)));
    let certificate = Certificate::new(target, &outcomes);
    println!("{}\n", killpoint::coverage::summarise(&certificate.rules));
    println!("{}", killpoint::checklist::table(&certificate.checklist));
    let html = args.report.html.as_ref().map(|_| killpoint::html::render(&certificate, &outcomes)).unwrap_or_default();
    for (path, text, what) in [
        (&args.json, certificate.to_json(), "JSON certificate"),
        (&args.junit, certificate.to_junit(), "JUnit report"),
        (&args.report.html, html, "HTML report"),
    ] {
        if let Some(path) = path {
            match std::fs::write(path, text) {
                Ok(()) => println!("{what} written to {}", path.display()),
                Err(e) => {
                    eprintln!("killpoint: cannot write the {what} to {}: {e}", path.display());
                    return ExitCode::from(2);
                }
            }
        }
    }
    let failed = outcomes.iter().any(|o| o.verdict.as_ref().map_or(true, |v| !v.passed()));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// `killpoint random`: exit 1 with the shrunk case's file and rerun command when a case fails.
fn random(target: &Target, args: &Args) -> ExitCode {
    let seed = args.seed.unwrap_or_else(killpoint::random::new_seed);
    let options = killpoint::random::RandomOptions {
        cases: args.cases,
        seed,
        out: args.out.clone(),
        max_shrink_iters: 64,
        waves: true,
        run: RunOptions { probe: args.probe, ..RunOptions::default() },
    };
    println!(
        "random: {} case(s) against {}, seed {seed} (replay with --seed {seed})",
        args.cases,
        target.program.display()
    );
    let found = match killpoint::random::search(target, &options) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("killpoint: {e}");
            return ExitCode::from(2);
        }
    };
    let rate = f64::from(found.runs) / found.elapsed.as_secs_f64().max(1e-9);
    println!("{} run(s) in {:.1} s ({rate:.1}/s)", found.runs, found.elapsed.as_secs_f64());
    match found.failure {
        None => {
            println!("every drawn case passed");
            ExitCode::SUCCESS
        }
        Some(failure) => {
            let violated: Vec<&str> = failure.violated.iter().map(|i| i.as_str()).collect();
            println!(
                "a case failed; shrunk to {} fault(s){}, written to {}\nrerun it with:\n  {}",
                failure.fault_count(),
                if violated.is_empty() {
                    " (it passed when run once more: the failure may depend on timing)".to_owned()
                } else {
                    format!(", violating {}", violated.join(", "))
                },
                failure.file.display(),
                failure.command
            );
            ExitCode::FAILURE
        }
    }
}

fn bench(scenarios: &[Scenario], target: &Target, options: &RunOptions, runs: u32) -> ExitCode {
    println!("bench: {runs} run(s) of {} scenario(s) against {}", scenarios.len(), target.program.display());
    let (mut suites, mut restarts, mut recoveries) = (Vec::new(), Vec::new(), Vec::new());
    let mut failures: Vec<String> = Vec::new();
    let mut clean_suites = 0;
    for i in 1..=runs {
        let started = Instant::now();
        let mut clean = true;
        for scenario in scenarios {
            match run_scenario(scenario, target, options) {
                Ok((verdict, run)) => {
                    restarts.extend(run.restarts.iter().copied());
                    recoveries.extend(run.recoveries.iter().copied());
                    if !verdict.passed() {
                        clean = false;
                        let kept = run.keep_artifacts();
                        let broken: Vec<&str> = verdict.failed_invariants().iter().map(|i| i.as_str()).collect();
                        failures.push(format!(
                            "run {i}: {} violated {broken:?}; artifacts at {}",
                            scenario.name,
                            kept.display()
                        ));
                    }
                }
                Err(e) => {
                    clean = false;
                    failures.push(format!("run {i}: {} could not run: {e}", scenario.name));
                }
            }
        }
        suites.push(started.elapsed());
        clean_suites += u32::from(clean);
        println!("  run {i:>3}: {:>7.1} ms{}", ms(suites[suites.len() - 1]), if clean { "" } else { "  FAILED" });
    }
    // The price of certification: the same workloads with no fault of any kind (no kill, no
    // freeze, a world that answers every request at once and truly), one run each way. Only the
    // time is compared; the fault-free runs are not judged.
    let plain: Vec<Scenario> = scenarios
        .iter()
        .map(|s| {
            let mut plain = s.clone();
            plain.faults.clear();
            plain.lookup_faults.clear();
            plain.policy_faults.clear();
            plain.consumer_faults.clear();
            plain
        })
        .collect();
    let timed = |list: &[Scenario]| {
        let started = Instant::now();
        for scenario in list {
            let _ = run_scenario(scenario, target, options);
        }
        started.elapsed()
    };
    let (with_faults, without) = (timed(scenarios), timed(&plain));
    println!("\n{clean_suites} passed, {} failed", runs - clean_suites);
    println!(
        "certification overhead:         {:.2} (certify {:.1} ms / the same workloads without faults {:.1} ms, one run each)",
        with_faults.as_secs_f64() / without.as_secs_f64().max(1e-9),
        ms(with_faults),
        ms(without)
    );
    println!("suite wall time:                {}", stats(&mut suites));
    println!("kill -> restarted (ready):      {}", stats(&mut restarts));
    println!("kill -> restarted -> recovered: {}", stats(&mut recoveries));
    for f in &failures {
        println!("  {f}");
    }
    if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn explore(scenario: &Scenario, target: &Target, run: RunOptions, args: &Args) -> ExitCode {
    use killpoint::explore::{self, ExploreOptions, Finding};
    let options = ExploreOptions {
        depth: args.depth,
        run,
        jobs: args.jobs.unwrap_or(ExploreOptions::default().jobs),
        shard: args.shard,
        first_failure: args.first_failure,
        // Shards list the cases each on its own machine: unpruned, they all list the same ones,
        // so together they run every case exactly once.
        prune: args.shard.is_none(),
        keep_failures: true,
        points: args.points,
    };
    let workload = explore::Workload::of(scenario);
    println!(
        "exploring `{}` ({} operation(s)) against {} at depth {}: {} hand-placed kill(s) dropped, {} world fault(s) kept",
        scenario.name,
        scenario.operations.len(),
        target.program.display(),
        options.depth,
        workload.dropped,
        workload.kept
    );
    // A bar on a terminal; plain lines (one per failure, one per 10%) when piped, as in CI.
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} crash points, {msg}, ETA {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    };
    let plain = !args.quiet && bar.is_hidden();
    let started = Instant::now();
    let progress = |finding: &Finding, done: usize, total: usize, failures: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(format!("{failures} failure(s)"));
        let failed = finding.status() == explore::CaseStatus::Fail;
        if plain && (failed || done * 10 / total.max(1) != (done - 1) * 10 / total.max(1)) {
            let status = if failed { "FAILED" } else { "ok" };
            eprintln!("  {done}/{total} {} {status} ({failures} failure(s) so far)", finding.case.name());
        }
    };
    let result = match explore::explore(scenario, target, &options, &progress) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("killpoint: the exploration could not run: {e}");
            return ExitCode::from(2);
        }
    };
    bar.finish_and_clear();
    let elapsed = started.elapsed();
    let mut failed = false;
    for finding in &result.failures {
        failed = true;
        if let Some(story) = &finding.story {
            eprintln!("{story}");
        }
        match write_case(&args.out, finding, target, args.probe) {
            Ok((path, command)) => {
                eprintln!("  written to {}\n  reproduce: {command}", path.display());
            }
            Err(e) => eprintln!("killpoint: cannot write the failing case to {}: {e}", args.out.display()),
        }
        if let Some(path) = &finding.artifacts {
            eprintln!("  {}\n", killpoint::artifacts::kept_at(path));
        }
    }
    let ran: usize = result.ran.iter().sum();
    let found: Vec<String> = result.points.iter().enumerate().map(|(d, n)| format!("{n} at depth {}", d + 1)).collect();
    println!(
        "crash points found: {}; cases run: {ran} ({} passed, {} partial, {} not reached, {} failed) in {:.1} s ({:.1} cases/s); pruned: {}{}",
        found.join(", "),
        result.passed,
        result.partial,
        result.not_reached,
        result.failures.len(),
        elapsed.as_secs_f64(),
        ran as f64 / elapsed.as_secs_f64().max(1e-9),
        result.pruned.len(),
        if result.other_shards > 0 {
            format!("; {} case(s) in other shards", result.other_shards)
        } else {
            String::new()
        }
    );
    for (why, n) in explore::pruned_summary(&result.pruned) {
        println!("  pruned {n}: {why}");
    }
    if !result.unseen.is_empty() {
        let names: Vec<&str> = result.unseen.iter().map(|b| b.as_str()).collect();
        println!("  not explored without the probe (the fake world cannot see them): {}", names.join(", "));
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Writes a failing case as a scenario file; returns its path and the command that replays it.
fn write_case(
    dir: &std::path::Path,
    finding: &killpoint::explore::Finding,
    target: &Target,
    probe: bool,
) -> std::io::Result<(PathBuf, String)> {
    std::fs::create_dir_all(dir)?;
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
    std::fs::write(&path, scenario.to_toml())?;
    let command = killpoint::random::rerun_command(&path, target, probe);
    Ok((path, command))
}

/// Explores one workload `--runs` times: crash points per second and the recovery figures.
fn bench_explore(scenario: &Scenario, target: &Target, run: RunOptions, args: &Args) -> ExitCode {
    use killpoint::explore::{self, ExploreOptions};
    let options = ExploreOptions {
        depth: args.depth,
        run,
        jobs: args.jobs.unwrap_or(ExploreOptions::default().jobs),
        shard: None,
        first_failure: false,
        prune: true,
        keep_failures: false,
        points: args.points,
    };
    println!(
        "bench: explore `{}` {} time(s) at depth {} with {} job(s) against {}",
        scenario.name,
        args.runs,
        options.depth,
        options.jobs,
        target.program.display()
    );
    let mut rates = Vec::new();
    let mut failed = false;
    for i in 1..=args.runs {
        let started = Instant::now();
        let result = match explore::explore(scenario, target, &options, &|_, _, _, _| {}) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("killpoint: the exploration could not run: {e}");
                return ExitCode::from(2);
            }
        };
        let elapsed = started.elapsed();
        let ran: usize = result.ran.iter().sum();
        let rate = ran as f64 / elapsed.as_secs_f64().max(1e-9);
        failed |= !result.failures.is_empty();
        println!(
            "  run {i:>3}: {ran} crash point(s) in {:.1} ms = {rate:.1}/s ({} failed, {} pruned)",
            ms(elapsed),
            result.failures.len(),
            result.pruned.len()
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "crash points per second:        median {:.1} (min {:.1}, max {:.1})",
        rates[rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
    // One certification of the workload as written, for the recovery figures.
    let mut restarts = Vec::new();
    let mut recoveries = Vec::new();
    for _ in 0..args.runs {
        if let Ok((_, r)) = run_scenario(scenario, target, &options.run) {
            restarts.extend(r.restarts.iter().copied());
            recoveries.extend(r.recoveries.iter().copied());
        }
    }
    println!("kill -> restarted (ready):      {}", stats(&mut restarts));
    println!("kill -> restarted -> recovered: {}", stats(&mut recoveries));
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `n=…, median …, p90 …, max …` in milliseconds.
fn stats(samples: &mut [Duration]) -> String {
    if samples.is_empty() {
        return "no samples".into();
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(
        "n={}, median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        samples.len(),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(samples[samples.len() - 1])
    )
}
