//! What a subcommand settles before it runs anything: the runtime (checked once), the run
//! options, where the crash points are, and the scenarios chosen.

use super::{Output, Runtime, Selection, Usage};
use crate::model::crash::Crash;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::scenario::standard::ScenarioSet;
use crate::search::explore::Points;
use std::path::{Path, PathBuf};

/// The runtime to run, checked once before any scenario (path, executable bit, interpreter, and a
/// `--broken` variant it has; and room for its sockets in the temp dir): one message, rather than
/// the same failure in every scenario.
pub(super) fn target(args: &Runtime) -> Result<Target, Usage> {
    let Some(program) = args.runtime.clone().or_else(crate::run::incarnation::reference_runtime) else {
        let here = std::env::current_exe().ok().and_then(|e| e.parent().map(|d| d.display().to_string()));
        return Err(format!(
            "no --runtime given, and no reference runtime (killpoint-runtime) beside this binary in {}: give --runtime PATH, or put the reference runtime beside it (`cargo install --path .` from a checkout installs it; `cargo install --path harness` installs killpoint alone; `cargo build --workspace` builds both)",
            here.as_deref().unwrap_or("?")
        )
        .into());
    };
    // `--runtime runtime.py` means the file here: started as given, a bare name would be looked
    // up on PATH, and a relative path would not survive the runtime's own working directory.
    let program = match std::path::absolute(&program) {
        Ok(absolute) if program.is_relative() && absolute.is_file() => absolute,
        _ => program,
    };
    crate::run::artifacts::sockets_fit()?;
    crate::run::artifacts::set_keep_limit(args.keep_limit);
    if args.crash.traced()
        && let Err(why) = crate::run::traced::permitted()
    {
        let crash = args.crash.name();
        return Err(format!("--crash {crash} needs killpoint-tracer to see what the runtime syncs, and {why}").into());
    }
    if args.crash == Crash::Restore && !args.contract.has_restores() {
        let contract = args.contract;
        return Err(format!("--crash restore holds a runtime to CONTRACT.md section 13, which {contract} does not have: expected killpoint-contract/9 or later, found --contract {contract}").into());
    }
    if args.crash == Crash::Restore && !args.services.is_empty() {
        return Err("--crash restore cannot be given --services yet: a server's backup is not modelled".into());
    }
    if args.restore_lag.is_some() && args.crash != Crash::Restore {
        return Err(format!(
            "--restore-lag is the lag of a restore's backup: expected --crash restore, found --crash {}",
            args.crash.name()
        )
        .into());
    }
    if let Some(note) = crate::run::preflight::runtime(&program, &args.runtime_args)? {
        errln!("killpoint: {note}");
    }
    Ok(Target { program, args: args.runtime_args.clone() })
}

pub(super) fn run_options(args: &Runtime) -> RunOptions {
    RunOptions {
        probe: !args.no_probe,
        crash: args.crash,
        restore_lag: args.restore_lag,
        ready_timeout: args.ready_timeout,
        services: args.services.clone(),
        contract: args.contract,
        ..RunOptions::default()
    }
}

/// `--points` as asked, or `boundaries` where this machine refuses tracing (said in one line).
pub(super) fn points(asked: Points, runtime: &Runtime) -> Points {
    if asked == Points::Syscalls
        && let Err(why) = crate::run::traced::permitted()
    {
        let instead = if runtime.no_probe { "as a black box" } else { "with the probe" };
        errln!("killpoint: {why}: --points syscalls falls back to the named boundaries, {instead}");
        return Points::Boundaries;
    }
    asked
}

/// The run options of certify, run and bench: under the tracer with `--points syscalls`.
pub(super) fn traced_options(args: &Runtime, asked: Points) -> RunOptions {
    RunOptions { syscalls: points(asked, args) == Points::Syscalls, ..run_options(args) }
}

/// The scenarios of `select`, every one valid (a bad file is exit 2, before anything runs).
pub(super) fn scenarios(select: &Selection, copies: u32) -> Result<Vec<Scenario>, Usage> {
    let set = ScenarioSet { standard: !select.no_standard, dirs: select.scenarios.clone() };
    let mut chosen = Vec::new();
    // A scenario that cannot be read is a failed certification, not a skipped one; every one that
    // cannot is named at once, as `killpoint check` names them (not the first of seven).
    let mut unreadable = Vec::new();
    for s in set.load()? {
        match s {
            Err(e) => unreadable.push(e.to_string()),
            Ok(s) if select.filter.as_ref().is_none_or(|f| s.name.contains(f.as_str())) => {
                chosen.push(s.with_copies(copies))
            }
            Ok(_) => {}
        }
    }
    if !unreadable.is_empty() {
        return Err(unreadable.join("\n").into());
    }
    if chosen.is_empty() {
        let filter = select.filter.as_deref().map(|f| format!(" whose name contains `{f}`")).unwrap_or_default();
        return Err(format!("no scenario to run: none{filter} among the selected ones").into());
    }
    Ok(chosen)
}

/// `--artifacts-dir`, made if it does not exist yet (as `mkdir -p` would, like `--out`: the flag
/// names where runs are to go, and a fresh checkout's CI has no such directory yet). One that
/// cannot be made, or is not a directory, is one message before anything runs, rather than
/// every scenario's "could not run".
pub(super) fn artifacts_root(output: &Output) -> Result<Option<PathBuf>, Usage> {
    let Some(dir) = &output.artifacts_dir else { return Ok(None) };
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("--artifacts-dir {}: cannot make the directory: {e}", dir.display()))?;
    Ok(Some(dir.clone()))
}

/// Each report asked for (`--json`, `--junit`, `--html`) can be written once the run is over:
/// checked before anything runs, without making or changing a file, so a mistyped directory is
/// one message now rather than a lost report after the whole run.
pub(super) fn reports_writable(output: &Output) -> Result<(), Usage> {
    let asked =
        [("--json", &output.json), ("--junit", &output.junit), ("--html", &output.html), ("--otlp", &output.otlp)];
    let problems: Vec<String> = asked
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.as_ref()?)))
        .filter_map(|(flag, path)| writable(path).err().map(|why| format!("{flag} {}: {why}", path.display())))
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ").into()) }
}

/// Whether a file can be written at `path`: an existing one is writable and not a directory; a
/// new one's directory exists and can be written in.
fn writable(path: &Path) -> Result<(), String> {
    use nix::unistd::{AccessFlags, access};
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err("is a directory: expected the path of a file".into()),
        Ok(_) => return access(path, AccessFlags::W_OK).map_err(|e| format!("the file cannot be written ({e})")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot be looked at: {e}")),
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match std::fs::metadata(parent) {
        Ok(m) if m.is_dir() => access(parent, AccessFlags::W_OK | AccessFlags::X_OK)
            .map_err(|e| format!("the directory {} cannot be written in ({e})", parent.display())),
        Ok(_) => Err(format!("{} is not a directory", parent.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(format!("the directory {} does not exist (make it first)", parent.display()))
        }
        Err(e) => Err(format!("the directory {} cannot be looked at: {e}", parent.display())),
    }
}
