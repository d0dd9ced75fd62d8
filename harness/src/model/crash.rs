//! The crash models: what a kill takes down, and so what the data dir keeps for the next
//! incarnation. A word every layer shares: the run applies it, the verdict holds under it, the
//! scenario's `[[catches]]` may need it, the report says it.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// What a crash point's kill takes down, and so what the data dir keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Crash {
    /// SIGKILL of the runtime's process group: the page cache survives, every completed write is
    /// there after the restart.
    #[default]
    Process,
    /// A power loss at the kill: only what was synced survives (`run::power_loss`).
    Machine,
    /// The machine is lost at the kill and the runtime rebuilt on another from a backup that
    /// lags: the data dir is a consistent state taken earlier (`run::power_loss::backups`),
    /// restored into a new path, while the world keeps everything.
    Restore,
}

impl Crash {
    pub fn name(self) -> &'static str {
        match self {
            Crash::Process => "process",
            Crash::Machine => "machine",
            Crash::Restore => "restore",
        }
    }

    /// Whether the data dir a kill leaves is built from what the tracer saw synced (so every
    /// incarnation runs under it).
    pub fn traced(self) -> bool {
        self != Crash::Process
    }
}

/// How far behind the kill a restore's backup was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lag {
    /// The backup is the durable state as it stood `n` durable changes (syncs that changed what
    /// a power loss keeps) before the kill: 1 loses the last commit.
    Syncs(u32),
    /// The backup is the latest durable state at least this long before the kill, as an
    /// asynchronous replica that ships every so often would hold.
    Millis(u64),
}

impl Lag {
    /// Without a `[restore]` table or `--restore-lag`: the backup two durable changes back, which
    /// loses a result with the dispatch before it, or a dispatch with its intent.
    pub const DEFAULT: Lag = Lag::Syncs(2);

    pub fn duration(self) -> Option<Duration> {
        match self {
            Lag::Millis(ms) => Some(Duration::from_millis(ms)),
            Lag::Syncs(_) => None,
        }
    }

    /// `3` (syncs) or `250ms`, as `--restore-lag` takes it; `Err` says what was expected.
    pub fn parse(text: &str) -> Result<Lag, String> {
        let expected =
            || format!("expected a number of syncs (`2`) or of milliseconds (`250ms`) of at least 1, found `{text}`");
        let lag = match text.strip_suffix("ms") {
            Some(ms) => Lag::Millis(ms.trim().parse().map_err(|_| expected())?),
            None => Lag::Syncs(text.trim().parse().map_err(|_| expected())?),
        };
        match lag {
            Lag::Millis(0) | Lag::Syncs(0) => Err(expected()),
            lag => Ok(lag),
        }
    }
}

impl std::fmt::Display for Lag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lag::Syncs(1) => f.write_str("1 sync"),
            Lag::Syncs(n) => write!(f, "{n} syncs"),
            Lag::Millis(ms) => write!(f, "{ms} ms"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Lag;

    #[test]
    fn a_lag_is_syncs_or_milliseconds_of_at_least_one() {
        assert_eq!(Lag::parse("3"), Ok(Lag::Syncs(3)));
        assert_eq!(Lag::parse("250ms"), Ok(Lag::Millis(250)));
        for bad in ["0", "0ms", "x", "-1", "2s"] {
            let error = Lag::parse(bad).expect_err(bad);
            assert!(error.contains(bad), "{error}");
        }
    }
}
