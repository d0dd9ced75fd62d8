//! What a kept run directory holds besides the runtime's data dir: the scenario as it ran, the
//! merged timeline, the fake world's ledgers, each incarnation's logs, and `rerun.sh`, the one
//! command that reruns exactly this case.

use crate::judge::Verdict;
use crate::report::certificate::Certificate;
use crate::report::outcome::ScenarioOutcome;
use crate::report::timeline::Timeline;
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What `certify` and `run` are asked to write beside the text report: where run directories go
/// and where the HTML report is written. (`--keep-artifacts` is the `keep` of
/// `certify::certify`.)
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// `--html PATH`: the whole certification as one HTML file.
    pub html: Option<PathBuf>,
    /// `--artifacts-dir DIR`: where run directories are made (default: the system's temp dir).
    pub artifacts_dir: Option<PathBuf>,
}

/// The `killpoint` program to name in `rerun.sh` and in every printed replay line, by absolute
/// path: this one when it is the CLI, else the one built beside this executable (tests live in
/// `deps/`, one level deeper), else whatever `PATH` finds.
pub fn killpoint_program() -> PathBuf {
    let exe = std::env::current_exe().ok();
    let found = match &exe {
        Some(exe) if exe.file_name().is_some_and(|n| n == "killpoint") => Some(exe.clone()),
        _ => {
            let dir = exe.as_deref().and_then(Path::parent);
            [dir.map(|d| d.join("killpoint")), dir.and_then(Path::parent).map(|d| d.join("killpoint"))]
                .into_iter()
                .flatten()
                .find(|p| p.is_file())
        }
    };
    found.map_or_else(|| PathBuf::from("killpoint"), |p| std::fs::canonicalize(&p).unwrap_or(p))
}

/// `PROGRAM run FILE --runtime PATH [--points syscalls] [--no-probe] [--crash machine] [--services FILE] [--ready-timeout S]EXTRA [-- ARGS…]`: the
/// command that runs `file` in the mode of `options` (under the tracer, without the probe) against
/// the same runtime and arguments, from any directory. `program` and `extra` are put in as given.
///
/// The runtime's path is made absolute but not resolved: a virtualenv's `bin/python` is a link to
/// the base interpreter, which cannot import what the virtualenv installed (issue 32: a replay
/// failed on `ready` instead of reproducing). An argument that names a file from here (a script)
/// is made absolute too, so the line works from another directory.
pub fn run_command(program: &str, file: &Path, target: &Target, options: &RunOptions, extra: &str) -> String {
    let runtime = std::path::absolute(&target.program).unwrap_or_else(|_| target.program.clone());
    let mut command = format!(
        "{program} run {} --runtime {}",
        shell_word(&file.display().to_string()),
        shell_word(&runtime.display().to_string())
    );
    if options.syscalls {
        command.push_str(" --points syscalls");
    }
    if !options.probe {
        command.push_str(" --no-probe");
    }
    if options.crash != crate::model::crash::Crash::Process {
        command.push_str(&format!(" --crash {}", options.crash.name()));
    }
    if let Some(lag) = options.restore_lag {
        let lag = match lag {
            crate::model::crash::Lag::Syncs(n) => n.to_string(),
            crate::model::crash::Lag::Millis(ms) => format!("{ms}ms"),
        };
        command.push_str(&format!(" --restore-lag {lag}"));
    }
    if options.contract != crate::model::contract::Version::CURRENT {
        command.push_str(&format!(" --contract {}", options.contract));
    }
    if let Some(file) = &options.services.file {
        command.push_str(&format!(" --services {}", shell_word(&file.display().to_string())));
    }
    // Only a deadline other than the default is repeated: the case ran under it (in whole seconds,
    // rounded up, as the option takes it).
    if options.ready_timeout != RunOptions::default().ready_timeout {
        let seconds = options.ready_timeout.as_secs_f64().ceil().max(1.0) as u64;
        command.push_str(&format!(" --ready-timeout {seconds}"));
    }
    command.push_str(extra);
    if !target.args.is_empty() {
        command.push_str(" --");
        for a in &target.args {
            command.push(' ');
            command.push_str(&shell_word(&absolute_if_file(a)));
        }
    }
    command
}

/// `a`, absolute when it names an existing file relative to this directory. A script may be
/// resolved (its interpreter is the runtime's path, kept as given).
fn absolute_if_file(a: &str) -> String {
    let path = Path::new(a);
    match path.is_relative() && !a.starts_with('-') && path.is_file() {
        true => std::fs::canonicalize(path).map_or_else(|_| a.to_owned(), |p| p.display().to_string()),
        false => a.to_owned(),
    }
}

/// The line a person pastes to replay `file`: [`run_command`] with this `killpoint` by absolute
/// path.
pub fn replay_command(file: &Path, target: &Target, options: &RunOptions) -> String {
    run_command(&shell_word(&killpoint_program().display().to_string()), file, target, options, "")
}

/// The one command that reruns exactly this case: the scenario as run (`file`, written beside it)
/// in the same mode. Extra killpoint options given to `rerun.sh` (`--json`, `--artifacts-dir`) go
/// before the runtime's own arguments.
pub fn rerun_script(file: &Path, target: &Target, options: &RunOptions) -> String {
    let program = format!("\"${{KILLPOINT:-{}}}\"", killpoint_program().display());
    let command = run_command(&program, file, target, options, " \"$@\"");
    format!(
        "#!/bin/sh\n# Reruns exactly this case: the scenario as it ran, the same runtime, arguments and mode.\n# Set KILLPOINT to use another killpoint binary.\nexec {command}\n"
    )
}

/// Fills a run directory with what reproduces and explains the run: `<scenario>.toml` (the
/// scenario as it ran, named for it),
/// `trace.jsonl` (the merged timeline), the fake world's ledgers as JSON lines
/// (`ledger/provider.jsonl`, `ledger/consumer-<destination>.jsonl`, `ledger/policy.jsonl`), each
/// incarnation's stdout and stderr (`logs/incarnation-N.stdout.log`, …) and an executable
/// `rerun.sh`. Returns the path of `rerun.sh`. (`report.html` is written by the caller, which has
/// the certificate.)
pub fn write_evidence(
    dir: &Path,
    scenario: &crate::scenario::Scenario,
    ledger: &[fake_tool::Entry],
    timeline: &Timeline,
    target: &Target,
    options: &RunOptions,
) -> std::io::Result<PathBuf> {
    use fake_tool::{Event, Service};
    use std::collections::BTreeMap;
    // Named for the scenario: `killpoint run` names a scenario after its file, so the rerun is
    // told (and its artifacts named) as the case was.
    let file = dir.join(format!("{}.toml", plain(&scenario.name)));
    std::fs::write(&file, scenario.to_toml())?;
    let lines = |items: &mut dyn Iterator<Item = String>| items.map(|l| l + "\n").collect::<String>();
    std::fs::write(
        dir.join("trace.jsonl"),
        lines(&mut timeline.events.iter().map(|e| serde_json::to_string(e).expect("plain data"))),
    )?;
    let ledgers = dir.join("ledger");
    std::fs::create_dir_all(&ledgers)?;
    let mut files: BTreeMap<String, String> =
        ["provider", "policy"].into_iter().map(|n| (n.to_owned(), String::new())).collect();
    for entry in ledger {
        let file = match &entry.event {
            Event::ProviderCall { .. } | Event::ProviderLookup { .. } => "provider".to_owned(),
            Event::PolicyCheck { .. } | Event::Revocation { .. } => "policy".to_owned(),
            Event::ConsumerReceipt { destination, .. } => format!("consumer-{destination}"),
            Event::ModelCall { .. } => "model".to_owned(),
            Event::Fenced { service: Service::Provider, .. } => "provider".to_owned(),
            Event::Fenced { service: Service::Policy, .. } => "policy".to_owned(),
            Event::Fenced { service: Service::Consumer, destination, .. } => {
                format!("consumer-{}", destination.as_deref().unwrap_or("unknown"))
            }
        };
        let text = files.entry(file).or_default();
        text.push_str(&serde_json::to_string(entry).expect("plain data"));
        text.push('\n');
    }
    for (name, text) in files {
        // Destinations are the scenario's words: keep file names plain.
        std::fs::write(ledgers.join(format!("{}.jsonl", plain(&name))), text)?;
    }
    split_logs(&dir.join("logs"))?;
    let rerun = dir.join("rerun.sh");
    std::fs::write(&rerun, rerun_script(&file, target, options))?;
    std::fs::set_permissions(&rerun, std::fs::Permissions::from_mode(0o755))?;
    Ok(rerun)
}

/// Keeps `run`'s directory with its whole evidence ([`write_evidence`], and `report.html` of
/// `outcome`): sets `outcome.artifacts` and `outcome.rerun`. A file that cannot be written is said
/// at the end of the outcome's story, where the failure is told, not lost.
pub fn keep(outcome: &mut ScenarioOutcome, scenario: &Scenario, mut run: Run, target: &Target, options: &RunOptions) {
    let timeline = outcome.timeline.get_or_insert_with(|| Timeline::of(&run)).clone();
    let ledger = std::mem::take(&mut run.ledger);
    // Kept first, then written: a run in memory moves out when kept, and `rerun.sh` names the
    // scenario file where it ends up.
    let dir = run.keep_artifacts();
    let written = write_evidence(&dir, scenario, &ledger, &timeline, target, options);
    outcome.artifacts = Some(dir.clone());
    match written {
        Ok(rerun) => {
            outcome.rerun = Some(rerun);
            let one = std::slice::from_ref(outcome);
            let certificate = Certificate::new(target, one).with_services(&options.services);
            let report = crate::report::html::render(&certificate, one);
            if let Err(e) = std::fs::write(dir.join("report.html"), report) {
                append_story(outcome, &format!("killpoint: cannot write report.html in {}: {e}", dir.display()));
            }
        }
        Err(e) => {
            append_story(outcome, &format!("killpoint: cannot write the evidence files in {}: {e}", dir.display()))
        }
    }
}

/// [`keep`] for a case that `explore` or `random` ran: the directory kept, and the failure's
/// story with any problem keeping it said at its end.
pub fn keep_case(
    scenario: &Scenario,
    verdict: &Verdict,
    story: Option<String>,
    run: Run,
    target: &Target,
    options: &RunOptions,
) -> (PathBuf, Option<String>) {
    let mut outcome = ScenarioOutcome {
        name: scenario.name.clone(),
        file: scenario.path.clone(),
        verdict: Ok(verdict.clone()),
        duration: std::time::Duration::ZERO,
        story,
        artifacts: None,
        timeline: None,
        rerun: None,
    };
    keep(&mut outcome, scenario, run, target, options);
    (outcome.artifacts.expect("set by keep"), outcome.story)
}

fn append_story(outcome: &mut ScenarioOutcome, line: &str) {
    let story = outcome.story.get_or_insert_with(String::new);
    story.push_str(line);
    story.push('\n');
}

/// `logs/stdout.log` and `logs/stderr.log` hold every incarnation in turn, each after a
/// `--- killpoint: incarnation N ---` line: one file per incarnation and stream beside them.
fn split_logs(logs: &Path) -> std::io::Result<()> {
    for stream in ["stdout", "stderr"] {
        let Ok(bytes) = std::fs::read(logs.join(format!("{stream}.log"))) else { continue };
        let text = String::from_utf8_lossy(&bytes);
        let mut current: Option<(String, String)> = None;
        let flush = |part: Option<(String, String)>| -> std::io::Result<()> {
            if let Some((number, text)) = part {
                std::fs::write(logs.join(format!("incarnation-{number}.{stream}.log")), text)?;
            }
            Ok(())
        };
        for line in text.split_inclusive('\n') {
            if let Some(number) =
                line.trim_end().strip_prefix("--- killpoint: incarnation ").and_then(|r| r.strip_suffix(" ---"))
            {
                flush(current.take())?;
                current = Some((number.to_owned(), String::new()));
            } else if let Some((_, text)) = current.as_mut() {
                text.push_str(line);
            }
        }
        flush(current)?;
    }
    Ok(())
}

/// `name` as a plain file name: letters, digits, `-`, `_` and `.`, anything else `_`.
fn plain(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect()
}

/// `word` as one word of a POSIX shell command line: as it is when that is safe, else quoted.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-:=+,@".contains(&b)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replay line works from anywhere: the runtime by absolute path, a link (a virtualenv's
    /// `bin/python`) not resolved, and a script argument made absolute; other arguments as given.
    #[test]
    fn the_replay_line_keeps_links_and_makes_script_arguments_absolute() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("python");
        std::os::unix::fs::symlink("/bin/true", &link).unwrap();
        let script = dir.path().join("runtime.py");
        std::fs::write(&script, "").unwrap();
        let here = std::env::current_dir().unwrap();
        let relative = pathdiff(&script, &here);
        let target = Target { program: link.clone(), args: vec![relative, "--broken".into(), "x.py".into()] };
        let command = run_command("killpoint", Path::new("/c.toml"), &target, &RunOptions::default(), "");
        assert!(command.contains(&format!("--runtime {}", link.display())), "{command}");
        let script = std::fs::canonicalize(&script).unwrap();
        assert!(command.ends_with(&format!("-- {} --broken x.py", script.display())), "{command}");
    }

    /// `path` relative to `base` (both absolute), with `..` as needed.
    fn pathdiff(path: &Path, base: &Path) -> String {
        let (p, b): (Vec<_>, Vec<_>) = (path.components().collect(), base.components().collect());
        let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let ups = std::iter::repeat_n("..".to_owned(), b.len() - common);
        let downs = p[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned());
        ups.chain(downs).collect::<Vec<_>>().join("/")
    }

    /// A case run under another ready deadline is rerun under it; the default is not spelled out.
    #[test]
    fn the_rerun_command_repeats_a_ready_timeout_other_than_the_default() {
        let target = Target { program: PathBuf::from("/bin/true"), args: Vec::new() };
        let file = Path::new("case.toml");
        let default = run_command("killpoint", file, &target, &RunOptions::default(), "");
        assert!(!default.contains("--ready-timeout"), "{default}");
        let short = RunOptions { ready_timeout: std::time::Duration::from_millis(2500), ..RunOptions::default() };
        let command = run_command("killpoint", file, &target, &short, "");
        assert!(command.ends_with(" --ready-timeout 3"), "{command}");
        let older = RunOptions { contract: crate::model::contract::Version::V6, ..RunOptions::default() };
        let command = run_command("killpoint", file, &target, &older, "");
        assert!(command.contains(" --contract killpoint-contract/6"), "{command}");
        assert!(!default.contains("--contract"), "the current version is not spelled out: {default}");
    }
}
