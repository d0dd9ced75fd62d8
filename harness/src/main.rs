//! The `killpoint` command line (clap): `killpoint help`, `killpoint help <command>`.
//!
//! ```text
//! killpoint certify [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint run SCENARIO.toml [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint bench [SCENARIO.toml] [--runs N] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint explore SCENARIO.toml [--depth 1|2] [--jobs N] [--shard K/N] [--out DIR] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint random [--cases N] [--seed S] [--out DIR] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint check FILES…
//! killpoint list boundaries|tools|invariants|variants
//! killpoint completions bash|zsh|fish
//! ```
//! `certify` runs every scenario against the runtime and prints the scenario × verdict ×
//! invariants table; it exits 0 only if every scenario passes. `bench` runs the whole matrix N
//! times and reports pass counts and timings (suite wall time, kill → restarted, kill →
//! recovered): the speed figures live here, not in timed tests.
//!
//! The parsed options are plain structs (`CertifyArgs`, `RuntimeArgs`, `OutputArgs`, …): a new
//! flag is one field with its doc comment, which is its help line.

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use killpoint::report::certificate::Certificate;
use killpoint::report::{certify, story};
use killpoint::{RunOptions, Scenario, ScenarioSet, Target, Verdict, run_scenario};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const EXIT_STATUS: &str =
    "exit status: 0 when no scenario failed, 1 when one did, 2 for a usage or scenario-file error";

#[derive(Parser, Debug)]
#[command(
    name = "killpoint",
    version,
    about = "SIGKILLs an agent runtime at named boundaries and proves no crash became a duplicate side effect, a lost delivery or a policy breach",
    after_help = EXIT_STATUS,
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Every scenario against the runtime: the scenario and boundary × tool kind tables
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint certify --runtime ./target/debug/my-runtime\n",
        "  killpoint certify --runtime ./my-runtime --scenarios ./killpoint-scenarios   # the standard ones and yours\n",
        "  killpoint certify --runtime ./my-runtime --scenarios ./mine --no-standard     # yours alone\n",
        "  killpoint certify --filter delivery --json report.json --junit junit.xml\n",
        "  killpoint certify -- --broken blind-retry          # arguments after -- go to the runtime\n\n",
        "exit status: 0 when no scenario failed, 1 when one did, 2 for a usage or scenario-file error"
    ))]
    Certify(CertifyArgs),
    /// One scenario file; against the reference runtime, also its [[catches]] (each broken variant must be caught)
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint run scenarios/after_dispatch.toml\n",
        "  killpoint run killpoint-found/after_dispatch.x.toml --runtime ./my-runtime --no-probe\n\n",
        "exit status: 0 when the scenario passed (and every [[catches]] was caught), 1 when not, 2 for a usage or scenario-file error"
    ))]
    Run(RunArgs),
    /// The matrix N times: pass counts, timings and the certification overhead; with a scenario file, explore its workload N times
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint bench --runs 20\n",
        "  killpoint bench scenarios/concurrent_wave.toml --runs 5 --depth 2\n\n",
        "exit status: 0 when no run failed, 1 when one did, 2 for a usage or scenario-file error"
    ))]
    Bench(BenchArgs),
    /// Kill the workload at every boundary occurrence it passes; each failure is written as a scenario file
    #[command(after_help = concat!(
        "The scenario's hand-placed kills are dropped, its world faults kept.\n\n",
        "examples:\n",
        "  killpoint explore scenarios/concurrent_wave.toml --depth 2\n",
        "  killpoint explore scenarios/after_dispatch.toml --shard 1/4 --out found/\n",
        "  killpoint explore scenarios/after_dispatch.toml --points syscalls --first-failure\n\n",
        "exit status: 0 when no case failed, 1 when one did, 2 for a usage or scenario-file error"
    ))]
    Explore(ExploreArgs),
    /// N drawn workloads and fault schedules; the first that fails is shrunk and written as a scenario file
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint random --cases 500\n",
        "  killpoint random --seed 1234 --out found/     # the same seed draws and shrinks the same cases\n\n",
        "exit status: 0 when every case passed, 1 when one failed, 2 for a usage error"
    ))]
    Random(RandomArgs),
    /// Validate scenario files without running anything (for editors and pre-commit hooks)
    #[command(after_help = concat!(
        "Each mistake is printed as FILE:LINE:COL: message. The [[catches]] variant names are checked\n",
        "against the reference runtime's --broken variants when it is found (--runtime, or beside this binary).\n\n",
        "examples:\n",
        "  killpoint check scenarios/*.toml\n",
        "  killpoint check killpoint-scenarios/\n\n",
        "exit status: 0 when every file is valid, 2 when one is not"
    ))]
    Check(CheckArgs),
    /// Print the tables scenarios/README.md documents, from the code
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint list boundaries\n",
        "  killpoint list variants --runtime ./target/debug/killpoint-runtime"
    ))]
    List(ListArgs),
    /// Shell completions on stdout
    #[command(after_help = concat!(
        "examples:\n",
        "  killpoint completions bash > ~/.local/share/bash-completion/completions/killpoint\n",
        "  killpoint completions zsh > ~/.zfunc/_killpoint\n",
        "  killpoint completions fish > ~/.config/fish/completions/killpoint.fish"
    ))]
    Completions(CompletionsArgs),
}

/// The runtime under test and how it is started.
#[derive(Args, Debug, Clone)]
struct RuntimeArgs {
    /// The runtime to certify (default: killpoint-runtime built beside this binary)
    #[arg(long, value_name = "PATH")]
    runtime: Option<PathBuf>,
    /// Certify as a black box: no KILLPOINT_PROBE_SOCKET
    #[arg(long)]
    no_probe: bool,
    /// Arguments for the runtime, after `--`
    #[arg(last = true, value_name = "RUNTIME_ARGS")]
    runtime_args: Vec<String>,
}

/// Which scenarios a run certifies.
#[derive(Args, Debug, Clone)]
struct ScenarioArgs {
    /// Also every *.toml in DIR (repeatable); a file named like a standard scenario takes its place
    #[arg(long, value_name = "DIR")]
    scenarios: Vec<PathBuf>,
    /// Leave the embedded standard scenarios out: only those of --scenarios
    #[arg(long, requires = "scenarios")]
    no_standard: bool,
    /// Only scenarios whose name contains TEXT
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
}

/// What a certification writes besides its tables.
#[derive(Args, Debug, Clone)]
struct OutputArgs {
    /// Keep every data dir and log, not only those of failures
    #[arg(long)]
    keep_artifacts: bool,
    /// Write the JSON certificate (docs/report.md) to PATH
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write JUnit XML to PATH
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write the HTML report (the matrix, each scenario's timeline) to PATH; a failing run's artifacts always have one
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// Where run directories are made (default: the temp dir); failures keep theirs, with rerun.sh
    #[arg(long, value_name = "DIR")]
    artifacts_dir: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
struct CertifyArgs {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    select: ScenarioArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Run each scenario's workload N times over
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    operations: u32,
    /// Scenarios run at once (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// `syscalls`: run the runtime under killpoint-tracer (Linux x86_64), which with --no-probe reaches every boundary exactly (CONTRACT.md section 7, "Boundaries at system calls")
    #[arg(long, value_enum, default_value_t = PointsArg::Boundaries)]
    points: PointsArg,
}

#[derive(Args, Debug, Clone)]
struct RunArgs {
    /// The scenario file
    #[arg(value_name = "SCENARIO.toml")]
    scenario: PathBuf,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Run the scenario's workload N times over
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    operations: u32,
    /// `syscalls`: run the runtime under killpoint-tracer (Linux x86_64), which with --no-probe reaches every boundary exactly (CONTRACT.md section 7, "Boundaries at system calls")
    #[arg(long, value_enum, default_value_t = PointsArg::Boundaries)]
    points: PointsArg,
}

#[derive(Args, Debug, Clone)]
struct BenchArgs {
    /// Explore this scenario's workload instead of running the matrix
    #[arg(value_name = "SCENARIO.toml")]
    scenario: Option<PathBuf>,
    /// How many times
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    select: ScenarioArgs,
    /// Run each scenario's workload N times over
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    operations: u32,
    #[command(flatten)]
    explore: ExploreKnobs,
}

/// How an exploration is done (`explore`, and `bench SCENARIO.toml`).
#[derive(Args, Debug, Clone)]
struct ExploreKnobs {
    /// 2: also kill at every crash point of each kill's recovery
    #[arg(long, value_name = "1|2", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    depth: u8,
    /// Cases run at once (default: the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Where the crash points are: every named boundary occurrence, or every sync, rename, unlink, request and answer of the runtime's system calls (Linux x86_64, through killpoint-tracer: no probe needed). `bench` without a scenario: run the matrix under the tracer, and say what tracing costs
    #[arg(long, value_enum, default_value_t = PointsArg::Boundaries)]
    points: PointsArg,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum PointsArg {
    Boundaries,
    Syscalls,
}

impl From<PointsArg> for killpoint::search::explore::Points {
    fn from(p: PointsArg) -> Self {
        match p {
            PointsArg::Boundaries => killpoint::search::explore::Points::Boundaries,
            PointsArg::Syscalls => killpoint::search::explore::Points::Syscalls,
        }
    }
}

#[derive(Args, Debug, Clone)]
struct ExploreArgs {
    /// The scenario whose workload is explored
    #[arg(value_name = "SCENARIO.toml")]
    scenario: PathBuf,
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(flatten)]
    knobs: ExploreKnobs,
    /// Only the cases whose names hash into shard K of N (a stable hash, like `cargo nextest run --partition hash:K/N`); unpruned, so the N shards together run every case exactly once
    #[arg(long, value_name = "K/N", value_parser = shard)]
    shard: Option<(u64, u64)>,
    /// Where failing cases are written as scenario files
    #[arg(long, value_name = "DIR", default_value = "killpoint-found")]
    out: PathBuf,
    /// Stop at the first failing case
    #[arg(long)]
    first_failure: bool,
    /// No progress, only the summary
    #[arg(long)]
    quiet: bool,
    /// Run the scenario's workload N times over
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    operations: u32,
}

#[derive(Args, Debug, Clone)]
struct RandomArgs {
    #[command(flatten)]
    runtime: RuntimeArgs,
    /// Schedules to draw
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    cases: u32,
    /// The search's seed (default: a new one): the same seed draws and shrinks the same cases
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// Where the shrunk failing case is written as a scenario file
    #[arg(long, value_name = "DIR", default_value = "killpoint-found")]
    out: PathBuf,
}

#[derive(Args, Debug, Clone)]
struct CheckArgs {
    /// Scenario files, or directories of them
    #[arg(value_name = "FILES", required = true)]
    files: Vec<PathBuf>,
    /// The reference runtime whose --broken variants [[catches]] may name (default: beside this binary, if there)
    #[arg(long, value_name = "PATH")]
    runtime: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
struct ListArgs {
    /// Which table
    #[arg(value_enum)]
    table: Table,
    /// `variants`: the reference runtime to ask (default: beside this binary)
    #[arg(long, value_name = "PATH")]
    runtime: Option<PathBuf>,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    /// Where faults land ([[fault]] `at`)
    Boundaries,
    /// The provider's tools and their kinds ([[operation]] `tool`)
    Tools,
    /// What the checker proves ([[catches]] `invariants`)
    Invariants,
    /// The reference runtime's broken variants ([[catches]] `broken`)
    Variants,
}

#[derive(Args, Debug, Clone)]
struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

/// `K/N` with 1 <= K <= N.
fn shard(value: &str) -> Result<(u64, u64), String> {
    let parsed = value.split_once('/').and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    parsed
        .filter(|&(k, n)| k >= 1 && k <= n)
        .ok_or(format!("expected K/N with 1 <= K <= N (e.g. 1/2), found `{value}`"))
}

/// A usage or scenario-file error: printed as `killpoint: …`, exit status 2.
struct Usage(String);

impl<T: Into<String>> From<T> for Usage {
    fn from(message: T) -> Usage {
        Usage(message.into())
    }
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
        for path in killpoint::run::artifacts::live() {
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
    // clap prints usage errors (with suggestions) and exits 2; --help and --version exit 0.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Certify(args) => certify_command(&args),
        Command::Run(args) => run_command(&args),
        Command::Bench(args) => bench_command(&args),
        Command::Explore(args) => explore_command(&args),
        Command::Random(args) => target(&args.runtime).map(|t| random(&t, &args)),
        Command::Check(args) => check(&args),
        Command::List(args) => list(&args),
        Command::Completions(args) => {
            clap_complete::generate(args.shell, &mut Cli::command(), "killpoint", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|Usage(message)| {
        eprintln!("killpoint: {message}");
        ExitCode::from(2)
    })
}

/// The runtime to run, checked once before any scenario (path, executable bit, interpreter, and a
/// `--broken` variant it has): one message, rather than the same failure in every scenario.
fn target(args: &RuntimeArgs) -> Result<Target, Usage> {
    let Some(program) = args.runtime.clone().or_else(killpoint::reference_runtime) else {
        return Err(
            "no --runtime given and no reference runtime beside this binary; build it with `cargo build --workspace`"
                .into(),
        );
    };
    killpoint::run::preflight::runtime(&program, &args.runtime_args)?;
    Ok(Target { program, args: args.runtime_args.clone() })
}

fn run_options(args: &RuntimeArgs) -> RunOptions {
    RunOptions { probe: !args.no_probe, ..RunOptions::default() }
}

/// `--points` as asked, or `boundaries` where this machine refuses tracing (said in one line).
fn points(asked: PointsArg, runtime: &RuntimeArgs) -> PointsArg {
    if asked == PointsArg::Syscalls
        && let Err(why) = killpoint::run::traced::permitted()
    {
        let instead = if runtime.no_probe { "as a black box" } else { "with the probe" };
        eprintln!("killpoint: {why}: --points syscalls falls back to the named boundaries, {instead}");
        return PointsArg::Boundaries;
    }
    asked
}

/// The run options of certify, run and bench: under the tracer with `--points syscalls`.
fn traced_options(args: &RuntimeArgs, asked: PointsArg) -> RunOptions {
    RunOptions { syscalls: points(asked, args) == PointsArg::Syscalls, ..run_options(args) }
}

/// The scenarios of `select`, every one valid (a bad file is exit 2, before anything runs).
fn scenarios(select: &ScenarioArgs, copies: u32) -> Result<Vec<Scenario>, Usage> {
    let set = ScenarioSet { standard: !select.no_standard, dirs: select.scenarios.clone() };
    let mut chosen = Vec::new();
    for s in set.load()? {
        // A scenario that cannot be read is a failed certification, not a skipped one.
        let s = s.map_err(|e| e.to_string())?;
        if select.filter.as_ref().is_none_or(|f| s.name.contains(f.as_str())) {
            chosen.push(s.with_copies(copies));
        }
    }
    if chosen.is_empty() {
        let filter = select.filter.as_deref().map(|f| format!(" whose name contains `{f}`")).unwrap_or_default();
        return Err(format!("no scenario to run: none{filter} among the selected ones").into());
    }
    Ok(chosen)
}

fn certify_command(args: &CertifyArgs) -> Result<ExitCode, Usage> {
    let target = target(&args.runtime)?;
    let scenarios = scenarios(&args.select, args.operations)?;
    let options =
        RunOptions { artifacts_root: args.output.artifacts_dir.clone(), ..traced_options(&args.runtime, args.points) };
    Ok(certify(&scenarios, &target, &options, &args.output, args.jobs))
}

fn run_command(args: &RunArgs) -> Result<ExitCode, Usage> {
    let target = target(&args.runtime)?;
    let scenario = Scenario::load(&args.scenario).map_err(|e| e.to_string())?;
    // The catches are proven against the reference runtime only: the runtime itself says whether
    // it has broken variants, and which (`--list-broken`); a misspelt one is the file's error.
    let variants = if scenario.catches.is_empty() || !target.args.is_empty() {
        None
    } else {
        killpoint::model::variants::of(&target.program).ok()
    };
    if let Some(known) = &variants {
        scenario.check_catches(known).map_err(|e| e.to_string())?;
    }
    let options =
        RunOptions { artifacts_root: args.output.artifacts_dir.clone(), ..traced_options(&args.runtime, args.points) };
    let verdict =
        certify(std::slice::from_ref(&scenario.with_copies(args.operations)), &target, &options, &args.output, None);
    if scenario.catches.is_empty() {
        return Ok(verdict);
    }
    let Some(_) = variants else {
        println!(
            "[[catches]] not run: they need the reference runtime with no runtime arguments (it lists its variants with --list-broken)"
        );
        return Ok(verdict);
    };
    let mut all_caught = true;
    for catch in &scenario.catches {
        match killpoint::trials::caught_by(&scenario, &target, &options, &catch.broken, &catch.invariants) {
            Ok(()) => println!("caught: --broken {} violates {}", catch.broken, catch.invariants.join(", ")),
            Err(why) => {
                all_caught = false;
                eprintln!("NOT CAUGHT: {why}");
            }
        }
    }
    Ok(if all_caught { verdict } else { ExitCode::FAILURE })
}

fn bench_command(args: &BenchArgs) -> Result<ExitCode, Usage> {
    let target = target(&args.runtime)?;
    let mut args = args.clone();
    args.explore.points = points(args.explore.points, &args.runtime);
    match &args.scenario {
        Some(path) => {
            let scenario = Scenario::load(path).map_err(|e| e.to_string())?.with_copies(args.operations);
            Ok(bench_explore(&scenario, &target, run_options(&args.runtime), &args))
        }
        None => {
            let options = traced_options(&args.runtime, args.explore.points);
            Ok(bench(&scenarios(&args.select, args.operations)?, &target, &options, args.runs))
        }
    }
}

fn explore_command(args: &ExploreArgs) -> Result<ExitCode, Usage> {
    let target = target(&args.runtime)?;
    let scenario = Scenario::load(&args.scenario).map_err(|e| e.to_string())?.with_copies(args.operations);
    let mut args = args.clone();
    args.knobs.points = points(args.knobs.points, &args.runtime);
    Ok(explore(&scenario, &target, run_options(&args.runtime), &args))
}

/// `killpoint check`: every file parsed and checked, every error printed, nothing run.
fn check(args: &CheckArgs) -> Result<ExitCode, Usage> {
    let mut files = Vec::new();
    for path in &args.files {
        if path.is_dir() {
            let found = Scenario::load_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            files.extend(found);
        } else {
            files.push(Scenario::load(path));
        }
    }
    let variants =
        args.runtime.clone().or_else(killpoint::reference_runtime).map(|p| killpoint::model::variants::of(&p));
    let mut bad = 0;
    for file in &files {
        let checked = file.as_ref().map_err(|e| e.clone()).and_then(|s| match &variants {
            Some(Ok(known)) => s.check_catches(known),
            _ => Ok(()),
        });
        match checked {
            Ok(()) => {}
            Err(e) => {
                bad += 1;
                eprintln!("{e}");
            }
        }
    }
    if let Some(Err(why)) = &variants
        && args.runtime.is_some()
    {
        return Err(why.clone().into());
    }
    if variants.is_none() && files.iter().any(|f| f.as_ref().is_ok_and(|s| !s.catches.is_empty())) {
        eprintln!(
            "note: [[catches]] variant names not checked: no reference runtime beside this binary (give --runtime)"
        );
    }
    println!("{} file(s) checked, {} with errors", files.len(), bad);
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// `killpoint list`: the tables of scenarios/README.md, from the code.
fn list(args: &ListArgs) -> Result<ExitCode, Usage> {
    use killpoint::model::boundary::{Boundary, Site};
    use killpoint::model::invariant::Invariant;
    let rows: Vec<(String, String)> = match args.table {
        Table::Boundaries => Boundary::ALL
            .iter()
            .map(|b| {
                let who = match b.site() {
                    Site::Probe => "runtime probe",
                    Site::Provider => "provider",
                    Site::Client => "the harness, as client",
                };
                (b.as_str().to_owned(), format!("{:<88}  {who}", b.summary()))
            })
            .collect(),
        Table::Tools => fake_tool::ToolKind::ALL
            .iter()
            .map(|&k| {
                use fake_tool::ToolKind;
                let owed = match k {
                    ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup => {
                        "look up; retry with the same key if not found"
                    }
                    ToolKind::NonIdempotentNoLookup => "pause (UNKNOWN) for an operator; never retry",
                    ToolKind::SafelyRepeatable => "retry",
                };
                (k.tool_name().to_owned(), format!("{:<28}  {owed}", k.as_str()))
            })
            .collect(),
        Table::Invariants => Invariant::ALL.iter().map(|i| (i.as_str().to_owned(), i.summary().to_owned())).collect(),
        Table::Variants => {
            let program = args.runtime.clone().or_else(killpoint::reference_runtime).ok_or(
                "no --runtime given and no reference runtime beside this binary: the variants are the reference runtime's",
            )?;
            killpoint::model::variants::of(&program)?.into_iter().map(|v| (v.name, v.description)).collect()
        }
    };
    let header = match args.table {
        Table::Boundaries => format!("{:<88}  seen by", "where (CONTRACT.md section 7)"),
        Table::Tools => format!("{:<28}  what the runtime owes after an unknown outcome", "kind"),
        Table::Invariants => "what it proves".to_owned(),
        Table::Variants => "what it gets wrong".to_owned(),
    };
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0).max(4);
    println!("{:<width$}  {header}", "name");
    for (name, what) in rows {
        println!("{name:<width$}  {what}");
    }
    Ok(ExitCode::SUCCESS)
}

fn certify(
    scenarios: &[Scenario],
    target: &Target,
    options: &RunOptions,
    output: &OutputArgs,
    jobs: Option<u32>,
) -> ExitCode {
    println!("certifying {} against {} scenario(s)\n", target.program.display(), scenarios.len());
    let jobs = jobs.map_or(killpoint::search::explore::ExploreOptions::default().jobs, |j| j as usize);
    let outcomes = certify::certify(scenarios, target, options, output.keep_artifacts, jobs);
    for o in &outcomes {
        if let Some(story) = &o.story {
            eprintln!("{story}");
        }
        if let Some(path) = &o.artifacts {
            eprintln!("{}: {}", o.name, killpoint::run::artifacts::kept_at(path));
        }
        if let Some(rerun) = &o.rerun {
            eprintln!("{}: rerun exactly this case with: {}\n", o.name, rerun.display());
        }
    }
    let rows: Vec<(String, Result<Verdict, String>)> =
        outcomes.iter().map(|o| (o.name.clone(), o.verdict.clone())).collect();
    print!("{}", story::table(&rows));
    let verdicts: Vec<&Verdict> = outcomes.iter().filter_map(|o| o.verdict.as_ref().ok()).collect();
    println!("\n{}", story::matrix_table(&story::matrix(&verdicts)));
    let traced = story::at_syscalls(&verdicts);
    if !traced.is_empty() {
        let names: Vec<&str> = traced.iter().map(|b| b.as_str()).collect();
        println!(
            "hit exactly at system calls, without the probe (killpoint-tracer, CONTRACT.md section 7): {}\n",
            names.join(", ")
        );
    }
    let certificate = Certificate::new(target, &outcomes);
    println!("{}\n", killpoint::judge::rules::summarise(&certificate.rules));
    println!("{}", killpoint::report::checklist::table(&certificate.checklist));
    let html =
        output.html.as_ref().map(|_| killpoint::report::html::render(&certificate, &outcomes)).unwrap_or_default();
    for (path, text, what) in [
        (&output.json, certificate.to_json(), "JSON certificate"),
        (&output.junit, certificate.to_junit(), "JUnit report"),
        (&output.html, html, "HTML report"),
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
fn random(target: &Target, args: &RandomArgs) -> ExitCode {
    let seed = args.seed.unwrap_or_else(killpoint::search::random::new_seed);
    let options = killpoint::search::random::RandomOptions {
        cases: args.cases,
        seed,
        out: args.out.clone(),
        max_shrink_iters: 64,
        waves: true,
        run: run_options(&args.runtime),
    };
    println!(
        "random: {} case(s) against {}, seed {seed} (replay with --seed {seed})",
        args.cases,
        target.program.display()
    );
    let found = match killpoint::search::random::search(target, &options) {
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
    let timed = |list: &[Scenario], options: &RunOptions| {
        let started = Instant::now();
        for scenario in list {
            let _ = run_scenario(scenario, target, options);
        }
        started.elapsed()
    };
    let (with_faults, without) = (timed(scenarios, options), timed(&plain, options));
    println!("\n{clean_suites} passed, {} failed", runs - clean_suites);
    println!(
        "certification overhead:         {:.2} (certify {:.1} ms / the same workloads without faults {:.1} ms, one run each)",
        with_faults.as_secs_f64() / without.as_secs_f64().max(1e-9),
        ms(with_faults),
        ms(without)
    );
    if options.syscalls {
        // The price of tracing: the same workloads, faults and all, untraced, one run each way.
        let untraced = RunOptions { syscalls: false, ..options.clone() };
        let (traced, plain) = (timed(scenarios, options), timed(scenarios, &untraced));
        println!(
            "tracing overhead:               {:.2} (traced {:.1} ms / untraced {:.1} ms, one run each)",
            traced.as_secs_f64() / plain.as_secs_f64().max(1e-9),
            ms(traced),
            ms(plain)
        );
    }
    println!("suite wall time:                {}", stats(&mut suites));
    println!("kill -> restarted (ready):      {}", stats(&mut restarts));
    println!("kill -> restarted -> recovered: {}", stats(&mut recoveries));
    for f in &failures {
        println!("  {f}");
    }
    if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

fn explore(scenario: &Scenario, target: &Target, run: RunOptions, args: &ExploreArgs) -> ExitCode {
    use killpoint::search::explore::{self, ExploreOptions, Finding};
    let options = ExploreOptions {
        depth: args.knobs.depth,
        run,
        jobs: args.knobs.jobs.map_or(ExploreOptions::default().jobs, |j| j as usize),
        shard: args.shard,
        first_failure: args.first_failure,
        // Shards list the cases each on its own machine: unpruned, they all list the same ones,
        // so together they run every case exactly once.
        prune: args.shard.is_none(),
        keep_failures: true,
        points: args.knobs.points.into(),
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
        match write_case(&args.out, finding, target, !args.runtime.no_probe) {
            Ok((path, command)) => {
                eprintln!("  written to {}\n  reproduce: {command}", path.display());
            }
            Err(e) => eprintln!("killpoint: cannot write the failing case to {}: {e}", args.out.display()),
        }
        if let Some(path) = &finding.artifacts {
            eprintln!("  {}\n", killpoint::run::artifacts::kept_at(path));
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
        result.pruned.len() + result.same_state.len(),
        if result.other_shards > 0 {
            format!("; {} case(s) in other shards", result.other_shards)
        } else {
            String::new()
        }
    );
    for (why, n) in explore::pruned_summary(&result.pruned) {
        println!("  pruned {n}: {why}");
    }
    if !result.same_state.is_empty() {
        println!(
            "  pruned {}: system calls that leave the same disk and world as the point before (no durable change, no send in between)",
            result.same_state.len()
        );
    }
    if !result.exact.is_empty() {
        let hit: Vec<String> = result.exact.iter().map(|(b, n)| format!("{b} ×{n}")).collect();
        println!("  boundaries hit exactly without the probe: {}", hit.join(", "));
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
    finding: &killpoint::search::explore::Finding,
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
    let command = killpoint::search::random::rerun_command(&path, target, probe);
    Ok((path, command))
}

/// Explores one workload `--runs` times: crash points per second and the recovery figures.
fn bench_explore(scenario: &Scenario, target: &Target, run: RunOptions, args: &BenchArgs) -> ExitCode {
    use killpoint::search::explore::{self, ExploreOptions};
    let options = ExploreOptions {
        depth: args.explore.depth,
        run,
        jobs: args.explore.jobs.map_or(ExploreOptions::default().jobs, |j| j as usize),
        shard: None,
        first_failure: false,
        prune: true,
        keep_failures: false,
        points: args.explore.points.into(),
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
            result.pruned.len() + result.same_state.len()
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
    // One certification of the workload as written, for the recovery figures: traced when the
    // points are system calls, so that a black box is killed at every boundary too.
    let certified = RunOptions { syscalls: options.points == explore::Points::Syscalls, ..options.run.clone() };
    let mut restarts = Vec::new();
    let mut recoveries = Vec::new();
    for _ in 0..args.runs {
        if let Ok((_, r)) = run_scenario(scenario, target, &certified) {
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
