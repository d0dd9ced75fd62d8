//! The `killpoint` command line (clap): `killpoint help`, `killpoint help <command>`.
//!
//! ```text
//! killpoint certify [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint run SCENARIO.toml [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint bench [SCENARIO.toml] [--runs N] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint explore SCENARIO.toml [--depth 1|2] [--jobs N] [--shard K/N] [--out DIR] [--json FILE] [OPTIONS] [-- RUNTIME_ARGS…]
//! killpoint merge SHARD.json… [--json FILE] [--junit FILE]
//! killpoint random [--cases N] [--seed S] [--shard K/N] [--out DIR] [--json FILE] [OPTIONS] [-- RUNTIME_ARGS…]
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
//! flag is one field with its doc comment, which is its help line. This file only parses and
//! calls: each subcommand's logic is in `killpoint::cli`, which takes the same options as plain
//! values (filled here, in the `From` conversions at the end), never clap's types.

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use killpoint::cli::{self, Usage};
use std::path::PathBuf;
use std::process::ExitCode;

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
        "  killpoint random --seed 1234 --out found/     # the same seed draws and shrinks the same cases\n",
        "  killpoint random --seed 1234 --shard 2/4 --json shard-2.json   # then: killpoint merge shard-*.json\n\n",
        "exit status: 0 when every case passed, 1 when one failed, 2 for a usage error"
    ))]
    Random(RandomArgs),
    /// Merge `explore`'s or `random`'s `--shard K/N --json` records of one campaign into one record and one JUnit report
    #[command(after_help = concat!(
        "Shards of another search, workload, seed, runtime, contract or mode are refused; a missing shard is named.\n\n",
        "examples:\n",
        "  killpoint merge shard-*.json --json campaign.json --junit campaign.xml\n\n",
        "exit status: 0 when no case failed, 1 when one did, 2 when the records cannot be merged"
    ))]
    Merge(MergeArgs),
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
    /// How long each start of the runtime has to print its ready line (CONTRACT.md section 2, "Readiness"); a slow one is given more, a test of a silent one less
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    ready_timeout: u64,
    /// What a kill takes down: `process` (SIGKILL; the page cache survives), `machine` (a power loss: the data dir keeps only what the runtime synced; runs under killpoint-tracer, Linux x86_64) or `restore` (the machine is lost: the runtime is rebuilt in a new data dir from a backup that lags, KILLPOINT_RESTORED set, while the world keeps everything; CONTRACT.md section 13)
    #[arg(long, value_enum, default_value_t = CrashArg::Process)]
    crash: CrashArg,
    /// With `--crash restore`: how far behind each kill its backup is, `N` durable changes (syncs that changed what a power loss keeps) or `Nms`; over every scenario's `[restore]` table (default: its table, else 2)
    #[arg(long, value_name = "LAG", value_parser = killpoint::model::crash::Lag::parse)]
    restore_lag: Option<killpoint::model::crash::Lag>,
    /// Processes of the runtime beside its worker (a workflow server, a database), declared in a TOML file: started before the first start of the worker, outside its process group, alive across its kills (CONTRACT.md section 2, "Services")
    #[arg(long, value_name = "FILE", value_parser = services_file)]
    services: Option<killpoint::run::services::Services>,
    /// The contract version the runtime declares: the current one, or an older one this harness still certifies by its own rules, its newer rules not claimed (CONTRACT.md, "Versions")
    #[arg(long, value_name = "VERSION", default_value = killpoint::model::contract::Version::CURRENT.name(), value_parser = contract_version)]
    contract: killpoint::model::contract::Version,
    /// The most the run directories this command keeps (failing runs', --keep-artifacts') may take on disk, in MB: past it a kept run keeps its evidence and rerun.sh but not its data dir, and says so
    #[arg(long, value_name = "MB", default_value_t = killpoint::run::artifacts::DEFAULT_KEEP_LIMIT / (1 << 20))]
    keep_limit: u64,
    /// Arguments for the runtime, after `--`
    #[arg(last = true, value_name = "RUNTIME_ARGS")]
    runtime_args: Vec<String>,
}

/// `--contract VERSION`: one of the versions this harness certifies.
fn contract_version(name: &str) -> Result<killpoint::model::contract::Version, String> {
    killpoint::model::contract::Version::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = killpoint::model::contract::Version::ALL.iter().map(|v| v.name()).collect();
        format!("expected one of {}, found `{name}`", names.join(", "))
    })
}

/// `--services FILE`, read and checked as the option is parsed: a mistake in it is a usage error
/// (exit 2) naming the file, line and column, before anything runs.
fn services_file(path: &str) -> Result<killpoint::run::services::Services, String> {
    killpoint::run::services::Services::load(std::path::Path::new(path)).map_err(|e| e.to_string())
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum CrashArg {
    Process,
    Machine,
    Restore,
}

impl From<CrashArg> for killpoint::model::crash::Crash {
    fn from(c: CrashArg) -> Self {
        match c {
            CrashArg::Process => killpoint::model::crash::Crash::Process,
            CrashArg::Machine => killpoint::model::crash::Crash::Machine,
            CrashArg::Restore => killpoint::model::crash::Crash::Restore,
        }
    }
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
    /// Write each scenario's timeline as an OpenTelemetry trace (OTLP/JSON: Jaeger, any OTLP viewer) to PATH
    #[arg(long, value_name = "PATH")]
    otlp: Option<PathBuf>,
    /// Where run directories are made (default: the temp dir; made if missing); failures keep theirs, with rerun.sh
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
    /// Scenarios run at once (default: twice the number of cores)
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
    /// Run the whole workload even when the crash state a written case failed from is kept beside its file (SCENARIO.state/, written by `explore`): what checking a fix to the steps before the kill needs
    #[arg(long)]
    rerun_prefix: bool,
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
    /// Cases run at once; with --schedules, seeds (default: twice the number of cores)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Where the crash points are: every named boundary occurrence, or every sync, rename, unlink, request and answer of the runtime's system calls (Linux x86_64, through killpoint-tracer: no probe needed). `bench` without a scenario: run the matrix under the tracer, and say what tracing costs
    #[arg(long, value_enum, default_value_t = PointsArg::Boundaries)]
    points: PointsArg,
    /// With `--points syscalls`: re-run the workload's prefix for every case, instead of running only the recovery from the crash state built at the point (in the record run; at depth 2, in the depth-1 case's run)
    #[arg(long)]
    rerun_prefix: bool,
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
    /// Only the cases whose names hash into shard K of N (a stable hash, like `cargo nextest run --partition hash:K/N`), each depth-2 case with its depth-1 case; unpruned, so the N shards together run every case exactly once
    #[arg(long, value_name = "K/N", value_parser = cli::shard)]
    shard: Option<(u64, u64)>,
    /// Where failing cases are written as scenario files, each as soon as it is found
    #[arg(long, value_name = "DIR", default_value = "killpoint-found")]
    out: PathBuf,
    /// Where the failing cases' run directories are kept (default: the temp dir; made if missing), with rerun.sh
    #[arg(long, value_name = "DIR")]
    artifacts_dir: Option<PathBuf>,
    /// Stop at the first failing case
    #[arg(long)]
    first_failure: bool,
    /// No progress and no stories: the summary, and where the failing cases are written and kept
    #[arg(long)]
    quiet: bool,
    /// Run the scenario's workload N times over
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    operations: u32,
    #[command(flatten)]
    records: RecordArgs,
    /// Explore the orders in which the runtime's threads meet, not crash points: the scenario as written (its kills kept) under the controlled schedules of seeds 1..=N (traced, Linux x86_64); each failing schedule is written with its seed pinned
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["depth", "points", "rerun_prefix", "shard", "operations", "json", "junit"])]
    schedules: Option<u64>,
    /// With --schedules: PCT's depth, 1 to 4 (1: drawn priorities only; each more adds a priority change point)
    #[arg(long, value_name = "D", requires = "schedules", value_parser = clap::value_parser!(u32).range(1..=4))]
    pct_depth: Option<u32>,
}

/// Where a campaign's records go (`explore`, `random`, `merge`).
#[derive(Args, Debug, Clone)]
struct RecordArgs {
    /// Write every case (name, verdict, invariants violated, time) and what was searched as JSON: one shard's record for `killpoint merge`
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write every case as a JUnit test case (a case not reached is skipped)
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
struct MergeArgs {
    /// The shards' records (`explore` or `random --shard K/N --json FILE`), every shard of one campaign
    #[arg(value_name = "SHARD.json", required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    records: RecordArgs,
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
    /// Shard K of a campaign of N given one --seed: draws --cases schedules from a seed of its own made from it
    #[arg(long, value_name = "K/N", value_parser = cli::shard, requires = "seed")]
    shard: Option<(u64, u64)>,
    /// Where the shrunk failing case is written as a scenario file (from its first failing run on, rewritten at each smaller case that still fails)
    #[arg(long, value_name = "DIR", default_value = "killpoint-found")]
    out: PathBuf,
    #[command(flatten)]
    records: RecordArgs,
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
    /// The standard scenarios
    Scenarios,
}

#[derive(Args, Debug, Clone)]
struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

fn main() -> ExitCode {
    cli::interrupt::on_interrupt();
    // clap prints usage errors (with suggestions) and exits 2; --help and --version exit 0.
    let parsed = Cli::parse();
    let result = match parsed.command {
        Command::Certify(args) => cli::certify::CertifyCommand::from(args).run(),
        Command::Run(args) => cli::run::RunCommand::from(args).run(),
        Command::Bench(args) => cli::bench::BenchCommand::from(args).run(),
        Command::Explore(args) => cli::explore::ExploreCommand::from(args).run(),
        Command::Random(a) => {
            let (cases, seed, shard, out, records) = (a.cases, a.seed, a.shard, a.out, a.records.into());
            cli::random::RandomCommand { runtime: a.runtime.into(), cases, seed, shard, out, records }.run()
        }
        Command::Merge(args) => cli::campaign::merge(&args.files, &args.records.into()),
        Command::Check(args) => cli::check::check(&args.files, args.runtime.as_deref()),
        Command::List(args) => cli::list::list(args.table.into(), args.runtime.as_deref()),
        Command::Completions(args) => {
            // Rendered first: clap_complete panics on a write that fails (a closed stdout).
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "killpoint", &mut script);
            cli::console::out_bytes(&script);
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|Usage(message)| {
        cli::console::err(format_args!("killpoint: {message}\n"));
        ExitCode::from(2)
    })
}

// The clap arguments as the plain options `killpoint::cli` takes.

impl From<RuntimeArgs> for cli::Runtime {
    fn from(a: RuntimeArgs) -> Self {
        cli::Runtime {
            runtime: a.runtime,
            no_probe: a.no_probe,
            ready_timeout: std::time::Duration::from_secs(a.ready_timeout),
            crash: a.crash.into(),
            restore_lag: a.restore_lag,
            services: a.services.unwrap_or_default(),
            contract: a.contract,
            keep_limit: a.keep_limit << 20,
            runtime_args: a.runtime_args,
        }
    }
}

impl From<ScenarioArgs> for cli::Selection {
    fn from(a: ScenarioArgs) -> Self {
        cli::Selection { scenarios: a.scenarios, no_standard: a.no_standard, filter: a.filter }
    }
}

impl From<OutputArgs> for cli::Output {
    fn from(a: OutputArgs) -> Self {
        cli::Output {
            keep_artifacts: a.keep_artifacts,
            json: a.json,
            junit: a.junit,
            html: a.html,
            otlp: a.otlp,
            artifacts_dir: a.artifacts_dir,
        }
    }
}

impl From<ExploreKnobs> for cli::explore::Knobs {
    fn from(a: ExploreKnobs) -> Self {
        cli::explore::Knobs { depth: a.depth, jobs: a.jobs, points: a.points.into(), rerun_prefix: a.rerun_prefix }
    }
}

impl From<CertifyArgs> for cli::certify::CertifyCommand {
    fn from(a: CertifyArgs) -> Self {
        cli::certify::CertifyCommand {
            runtime: a.runtime.into(),
            select: a.select.into(),
            output: a.output.into(),
            operations: a.operations,
            jobs: a.jobs,
            points: a.points.into(),
        }
    }
}

impl From<RunArgs> for cli::run::RunCommand {
    fn from(a: RunArgs) -> Self {
        cli::run::RunCommand {
            scenario: a.scenario,
            runtime: a.runtime.into(),
            output: a.output.into(),
            operations: a.operations,
            points: a.points.into(),
            rerun_prefix: a.rerun_prefix,
        }
    }
}

impl From<BenchArgs> for cli::bench::BenchCommand {
    fn from(a: BenchArgs) -> Self {
        cli::bench::BenchCommand {
            scenario: a.scenario,
            runs: a.runs,
            runtime: a.runtime.into(),
            select: a.select.into(),
            operations: a.operations,
            explore: a.explore.into(),
        }
    }
}

impl From<ExploreArgs> for cli::explore::ExploreCommand {
    fn from(a: ExploreArgs) -> Self {
        cli::explore::ExploreCommand {
            scenario: a.scenario,
            runtime: a.runtime.into(),
            knobs: a.knobs.into(),
            shard: a.shard,
            out: a.out,
            artifacts_dir: a.artifacts_dir,
            first_failure: a.first_failure,
            quiet: a.quiet,
            operations: a.operations,
            records: a.records.into(),
            schedules: a.schedules.map(|seeds| (seeds, a.pct_depth.unwrap_or(1))),
        }
    }
}

impl From<RecordArgs> for cli::campaign::Records {
    fn from(a: RecordArgs) -> Self {
        cli::campaign::Records { json: a.json, junit: a.junit }
    }
}

impl From<Table> for cli::list::Table {
    fn from(t: Table) -> Self {
        match t {
            Table::Boundaries => cli::list::Table::Boundaries,
            Table::Tools => cli::list::Table::Tools,
            Table::Invariants => cli::list::Table::Invariants,
            Table::Variants => cli::list::Table::Variants,
            Table::Scenarios => cli::list::Table::Scenarios,
        }
    }
}
