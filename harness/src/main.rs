//! The `killpoint` command line.
//!
//! ```text
//! killpoint certify [--runtime PATH] [--scenarios DIR] [--filter TEXT] [--keep-artifacts] [-- ARGS…]
//! killpoint run SCENARIO.toml [--runtime PATH] [--keep-artifacts] [-- ARGS…]
//! killpoint bench [--runs N] [--runtime PATH] [--scenarios DIR] [--filter TEXT] [-- ARGS…]
//! ```
//! `certify` runs every scenario against the runtime and prints the scenario × verdict ×
//! invariants table; it exits 0 only if every scenario passes. `bench` runs the whole matrix N
//! times and reports pass counts and timings (suite wall time, kill → restarted, kill →
//! recovered): the speed figures live here, not in timed tests.

use killpoint::{RunOptions, Scenario, Target, Verdict, report, run_scenario};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str = "usage:
  killpoint certify [--runtime PATH] [--scenarios DIR] [--filter TEXT] [--keep-artifacts] [-- RUNTIME_ARGS…]
  killpoint run SCENARIO.toml [--runtime PATH] [--keep-artifacts] [-- RUNTIME_ARGS…]
  killpoint bench [--runs N] [--runtime PATH] [--scenarios DIR] [--filter TEXT] [-- RUNTIME_ARGS…]

--runtime defaults to the reference runtime built beside this binary (target/debug/killpoint-runtime).
--scenarios defaults to ./scenarios. --runs defaults to 10.";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Command {
    Certify,
    Run,
    Bench,
}

struct Args {
    command: Command,
    scenario: Option<PathBuf>,
    runtime: Option<PathBuf>,
    scenarios: PathBuf,
    filter: Option<String>,
    keep: bool,
    runs: u32,
    runtime_args: Vec<String>,
}

fn parse(mut raw: impl Iterator<Item = String>) -> Result<Args, String> {
    let command = match raw.next().as_deref() {
        Some("certify") => Command::Certify,
        Some("run") => Command::Run,
        Some("bench") => Command::Bench,
        Some("-h" | "--help") => return Err(String::new()),
        Some(other) => return Err(format!("unknown command `{other}`; expected `certify`, `run` or `bench`")),
        None => return Err("expected a command: `certify`, `run` or `bench`".into()),
    };
    let mut args = Args {
        command,
        scenario: None,
        runtime: None,
        scenarios: PathBuf::from("scenarios"),
        filter: None,
        keep: false,
        runs: 10,
        runtime_args: Vec::new(),
    };
    while let Some(arg) = raw.next() {
        let mut value = |flag: &str| raw.next().ok_or(format!("{flag} expects a value"));
        match arg.as_str() {
            "--runtime" => args.runtime = Some(value("--runtime")?.into()),
            "--scenarios" => args.scenarios = value("--scenarios")?.into(),
            "--filter" => args.filter = Some(value("--filter")?),
            "--keep-artifacts" => args.keep = true,
            "--runs" => {
                let v = value("--runs")?;
                args.runs = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(format!("--runs expects a positive number, found `{v}`"))?;
            }
            "--" => args.runtime_args = raw.by_ref().collect(),
            "-h" | "--help" => return Err(String::new()),
            other if command == Command::Run && args.scenario.is_none() && !other.starts_with('-') => {
                args.scenario = Some(other.into());
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if command == Command::Run && args.scenario.is_none() {
        return Err("`run` expects a scenario file".into());
    }
    Ok(args)
}

fn main() -> ExitCode {
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
            Ok(s) if args.filter.as_ref().is_none_or(|f| s.name.contains(f.as_str())) => scenarios.push(s),
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
    match args.command {
        Command::Certify | Command::Run => certify(&scenarios, &target, args.keep),
        Command::Bench => bench(&scenarios, &target, args.runs),
    }
}

fn certify(scenarios: &[Scenario], target: &Target, keep: bool) -> ExitCode {
    println!("certifying {} against {} scenario(s)\n", target.program.display(), scenarios.len());
    let mut rows: Vec<(String, Result<Verdict, String>)> = Vec::new();
    for scenario in scenarios {
        match run_scenario(scenario, target, &RunOptions::default()) {
            Ok((verdict, run)) => {
                if !verdict.passed() {
                    eprintln!("{}", report::story(scenario, &verdict, &run));
                }
                if !verdict.passed() || keep {
                    let kept = run.keep_artifacts();
                    eprintln!(
                        "{}: artifacts kept at {} (data/ is the runtime's data dir, logs/ its output)\n",
                        scenario.name,
                        kept.display()
                    );
                }
                rows.push((scenario.name.clone(), Ok(verdict)));
            }
            Err(e) => rows.push((scenario.name.clone(), Err(e.to_string()))),
        }
    }
    print!("{}", report::table(&rows));
    if rows.iter().all(|(_, v)| v.as_ref().is_ok_and(Verdict::passed)) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn bench(scenarios: &[Scenario], target: &Target, runs: u32) -> ExitCode {
    println!("bench: {runs} run(s) of {} scenario(s) against {}", scenarios.len(), target.program.display());
    let (mut suites, mut restarts, mut recoveries) = (Vec::new(), Vec::new(), Vec::new());
    let mut failures: Vec<String> = Vec::new();
    let mut clean_suites = 0;
    for i in 1..=runs {
        let started = Instant::now();
        let mut clean = true;
        for scenario in scenarios {
            match run_scenario(scenario, target, &RunOptions::default()) {
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
    println!("\n{clean_suites} passed, {} failed", runs - clean_suites);
    println!("suite wall time:                {}", stats(&mut suites));
    println!("kill -> restarted (ready):      {}", stats(&mut restarts));
    println!("kill -> restarted -> recovered: {}", stats(&mut recoveries));
    for f in &failures {
        println!("  {f}");
    }
    if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
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
