//! What a kept run directory holds besides the runtime's data dir: the scenario as it ran, the
//! merged timeline, the fake world's ledgers, each incarnation's logs, and `rerun.sh`, the one
//! command that reruns exactly this case.

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

/// The `killpoint` program to name in `rerun.sh`: this one when it is the CLI, else the one built
/// beside this executable (tests live in `deps/`, one level deeper), else whatever `PATH` finds.
pub fn killpoint_program() -> PathBuf {
    let exe = std::env::current_exe().ok();
    if let Some(exe) = &exe
        && exe.file_name().is_some_and(|n| n == "killpoint")
    {
        return exe.clone();
    }
    let dir = exe.as_deref().and_then(Path::parent);
    [dir.map(|d| d.join("killpoint")), dir.and_then(Path::parent).map(|d| d.join("killpoint"))]
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("killpoint"))
}

/// The one command that reruns exactly this case: the scenario as run (written beside it) against
/// the same runtime, arguments and probe setting. Extra killpoint options given to `rerun.sh`
/// (`--json`, `--artifacts-dir`) go before the runtime's own arguments.
pub fn rerun_script(dir: &Path, target: &crate::run::incarnation::Target, probe: bool) -> String {
    let program = std::fs::canonicalize(&target.program).unwrap_or_else(|_| target.program.clone());
    let mut command = format!(
        "\"${{KILLPOINT:-{}}}\" run {} --runtime {}{} \"$@\"",
        killpoint_program().display(),
        shell_word(&dir.join("scenario.toml").display().to_string()),
        shell_word(&program.display().to_string()),
        if probe { "" } else { " --no-probe" }
    );
    if !target.args.is_empty() {
        command.push_str(" --");
        for a in &target.args {
            command.push(' ');
            command.push_str(&shell_word(a));
        }
    }
    format!(
        "#!/bin/sh\n# Reruns exactly this case: the scenario as it ran, the same runtime and arguments.\n# Set KILLPOINT to use another killpoint binary.\nexec {command}\n"
    )
}

/// Fills a run directory with what reproduces and explains the run: `scenario.toml`,
/// `trace.jsonl` (the merged timeline), the fake world's ledgers as JSON lines
/// (`ledger/provider.jsonl`, `ledger/consumer-<destination>.jsonl`, `ledger/policy.jsonl`), each
/// incarnation's stdout and stderr (`logs/incarnation-N.stdout.log`, …) and an executable
/// `rerun.sh`. Returns the path of `rerun.sh`. (`report.html` is written by the caller, which has
/// the certificate.)
pub fn write_evidence(
    dir: &Path,
    scenario: &crate::scenario::Scenario,
    ledger: &[fake_tool::Entry],
    timeline: &crate::report::timeline::Timeline,
    target: &crate::run::incarnation::Target,
    probe: bool,
) -> std::io::Result<PathBuf> {
    use fake_tool::{Event, Service};
    use std::collections::BTreeMap;
    std::fs::write(dir.join("scenario.toml"), scenario.to_toml())?;
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
        let name: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        std::fs::write(ledgers.join(format!("{name}.jsonl")), text)?;
    }
    split_logs(&dir.join("logs"))?;
    let rerun = dir.join("rerun.sh");
    std::fs::write(&rerun, rerun_script(dir, target, probe))?;
    std::fs::set_permissions(&rerun, std::fs::Permissions::from_mode(0o755))?;
    Ok(rerun)
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

/// `word` as one word of a POSIX shell command line: as it is when that is safe, else quoted.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-:=+,@".contains(&b)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
