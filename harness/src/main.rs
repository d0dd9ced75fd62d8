//! The `killpoint` command line.
//!
//! ```text
//! killpoint certify [--runtime PATH] [--scenarios DIR] [--filter TEXT] [--keep-artifacts] [-- ARGS…]
//! killpoint run SCENARIO.toml [--runtime PATH] [--keep-artifacts] [-- ARGS…]
//! ```
//! `certify` runs every scenario against the runtime and prints the scenario × verdict ×
//! invariants table; it exits 0 only if every scenario passes.

use killpoint::{RunOptions, Scenario, Target, report, run_scenario};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  killpoint certify [--runtime PATH] [--scenarios DIR] [--filter TEXT] [--keep-artifacts] [-- RUNTIME_ARGS…]
  killpoint run SCENARIO.toml [--runtime PATH] [--keep-artifacts] [-- RUNTIME_ARGS…]

--runtime defaults to the reference runtime built beside this binary (target/debug/killpoint-runtime).
--scenarios defaults to ./scenarios.";

struct Args {
    command: String,
    scenario: Option<PathBuf>,
    runtime: Option<PathBuf>,
    scenarios: PathBuf,
    filter: Option<String>,
    keep: bool,
    runtime_args: Vec<String>,
}

fn parse(mut raw: impl Iterator<Item = String>) -> Result<Args, String> {
    let command = raw.next().ok_or("expected a command: `certify` or `run`")?;
    if !matches!(command.as_str(), "certify" | "run") {
        return Err(format!("unknown command `{command}`; expected `certify` or `run`"));
    }
    let mut args = Args {
        command,
        scenario: None,
        runtime: None,
        scenarios: PathBuf::from("scenarios"),
        filter: None,
        keep: false,
        runtime_args: Vec::new(),
    };
    while let Some(arg) = raw.next() {
        let mut value = |flag: &str| raw.next().ok_or(format!("{flag} expects a value"));
        match arg.as_str() {
            "--runtime" => args.runtime = Some(value("--runtime")?.into()),
            "--scenarios" => args.scenarios = value("--scenarios")?.into(),
            "--filter" => args.filter = Some(value("--filter")?),
            "--keep-artifacts" => args.keep = true,
            "--" => {
                args.runtime_args = raw.by_ref().collect();
            }
            "-h" | "--help" => return Err(String::new()),
            other if args.command == "run" && args.scenario.is_none() && !other.starts_with('-') => {
                args.scenario = Some(other.into());
            }
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if args.command == "run" && args.scenario.is_none() {
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
    let options = RunOptions::default();

    let scenarios: Vec<Result<Scenario, String>> = match &args.scenario {
        Some(path) => vec![Scenario::load(path).map_err(|e| e.to_string())],
        None => match Scenario::load_dir(&args.scenarios) {
            Ok(all) => all.into_iter().map(|s| s.map_err(|e| e.to_string())).collect(),
            Err(e) => {
                eprintln!("killpoint: cannot read {}: {e}", args.scenarios.display());
                return ExitCode::from(2);
            }
        },
    };
    println!("certifying {} against {} scenario(s)\n", target.program.display(), scenarios.len());
    let mut rows = Vec::new();
    for scenario in scenarios {
        let scenario = match scenario {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                rows.push(("(unreadable)".to_owned(), Err(e)));
                continue;
            }
        };
        if args.filter.as_ref().is_some_and(|f| !scenario.name.contains(f.as_str())) {
            continue;
        }
        match run_scenario(&scenario, &target, &options) {
            Ok((verdict, run)) => {
                if !verdict.passed() {
                    eprintln!("{}", report::story(&scenario, &verdict, &run));
                }
                if !verdict.passed() || args.keep {
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
    if rows.iter().all(|(_, v)| v.as_ref().is_ok_and(|v| v.passed())) { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
