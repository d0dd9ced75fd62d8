//! The options several subcommands share, as plain values (`main.rs` fills them from its clap
//! arguments of the same names).

use std::path::PathBuf;

/// The runtime under test and how it is started.
#[derive(Debug, Clone, Default)]
pub struct Runtime {
    /// `--runtime`: the runtime to certify (default: killpoint-runtime built beside this binary).
    pub runtime: Option<PathBuf>,
    /// `--no-probe`: certify as a black box, no KILLPOINT_PROBE_SOCKET.
    pub no_probe: bool,
    /// `--ready-timeout`: how long each incarnation has to print its ready line.
    pub ready_timeout: std::time::Duration,
    /// `--crash`: what a kill takes down, the process or the machine.
    pub crash: crate::model::crash::Crash,
    /// `--restore-lag`: how far behind each kill a restore's backup is (`--crash restore`).
    pub restore_lag: Option<crate::model::crash::Lag>,
    /// `--services`: the runtime's processes beside its worker (none by default).
    pub services: crate::run::services::Services,
    /// `--contract`: the version the runtime is given and declares (the current one by default).
    pub contract: crate::model::contract::Version,
    /// `--keep-limit`: the most kept run directories may take on disk, in bytes.
    pub keep_limit: u64,
    /// Arguments for the runtime, after `--`.
    pub runtime_args: Vec<String>,
}

/// Which scenarios a run certifies.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// `--scenarios`: also every *.toml in these dirs.
    pub scenarios: Vec<PathBuf>,
    /// `--no-standard`: only those of `scenarios`.
    pub no_standard: bool,
    /// `--filter`: only scenarios whose name contains it.
    pub filter: Option<String>,
}

/// What a certification writes besides its tables.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// `--keep-artifacts`: every data dir and log, not only those of failures.
    pub keep_artifacts: bool,
    /// `--json`: where the JSON certificate goes.
    pub json: Option<PathBuf>,
    /// `--junit`: where the JUnit XML goes.
    pub junit: Option<PathBuf>,
    /// `--html`: where the HTML report goes.
    pub html: Option<PathBuf>,
    /// `--otlp`: where the timelines go as OpenTelemetry traces (OTLP/JSON).
    pub otlp: Option<PathBuf>,
    /// `--artifacts-dir`: where run directories are made (default: the temp dir; made if missing).
    pub artifacts_dir: Option<PathBuf>,
}

/// `--shard K/N` (explore, random) with 1 <= K <= N.
pub fn shard(value: &str) -> Result<(u64, u64), String> {
    let parsed = value.split_once('/').and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    parsed
        .filter(|&(k, n)| k >= 1 && k <= n)
        .ok_or(format!("expected K/N with 1 <= K <= N (e.g. 1/2), found `{value}`"))
}
