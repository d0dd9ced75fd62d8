//! A restart on a missing data dir (a scenario's `missing_data_dir`, CONTRACT.md §2-4): the
//! harness hides the dir, starts the next incarnation, and expects it to exit before its ready
//! line with the path in its stderr; then it puts the dir back, and the run restarts as usual.
//! A runtime that starts afresh instead has forgotten everything it accepted.

use super::record::{Happening, Refusal};
use super::restart::start;
use super::state::Driver;
use crate::run::incarnation::Launch;
use std::path::{Path, PathBuf};
use std::time::Instant;

impl Driver<'_> {
    /// Whether this restart is the one a `missing_data_dir` scenario hides the dir before: the
    /// first.
    pub(super) fn hides_data_dir(&self) -> bool {
        self.scenario.missing_data_dir && self.restarts.is_empty()
    }

    /// Starts incarnation `number` with the data dir hidden, marks what it did, and puts the dir
    /// back (removing whatever the incarnation made in its place). Errors only when the harness
    /// cannot move the dir.
    pub(super) async fn start_on_missing_dir(&mut self, launch: &Launch<'_>, number: u32) -> Result<(), String> {
        let moved = self.on_host(launch);
        let launch = moved.as_ref().unwrap_or(launch);
        let data = data_dir(launch)?;
        let hidden = data.with_extension("hidden");
        std::fs::rename(&data, &hidden)
            .map_err(|e| format!("cannot hide the data dir {} as {}: {e}", data.display(), hidden.display()))?;
        self.mark(Happening::Started { incarnation: number });
        let started = Instant::now();
        let refusal = match start(launch, number, &mut self.traced).await {
            Ok(mut afresh) => {
                afresh.kill().await;
                Refusal::StartedAfresh
            }
            Err(_) if started.elapsed() >= launch.ready_timeout => Refusal::Hung,
            Err(_) => {
                let stderr = own_stderr(launch.logs, number);
                match stderr.contains(&data.display().to_string()) {
                    true => Refusal::Refused,
                    false => Refusal::Unnamed { last_words: last_lines(&stderr, 5) },
                }
            }
        };
        let path = data.display().to_string();
        self.mark(Happening::MissingDataDir { incarnation: number, path, refusal });
        if data.exists() {
            // An incarnation that started afresh made a new dir (and state) there: not the run's.
            std::fs::remove_dir_all(&data)
                .map_err(|e| format!("cannot remove the data dir {} made afresh: {e}", data.display()))?;
        }
        std::fs::rename(&hidden, &data)
            .map_err(|e| format!("cannot put the data dir {} back from {}: {e}", data.display(), hidden.display()))
    }
}

fn data_dir(launch: &Launch<'_>) -> Result<PathBuf, String> {
    launch
        .env
        .iter()
        .find(|(name, _)| name == "KILLPOINT_DATA_DIR")
        .map(|(_, value)| PathBuf::from(value))
        .ok_or_else(|| "expected KILLPOINT_DATA_DIR in the runtime's environment, found none".to_owned())
}

/// Incarnation `number`'s own stderr: what follows its marker in the shared log.
fn own_stderr(logs: &Path, number: u32) -> String {
    let all = std::fs::read_to_string(logs.join("stderr.log")).unwrap_or_default();
    let marker = format!("--- killpoint: incarnation {number} ---");
    match all.rfind(&marker) {
        Some(at) => all[at + marker.len()..].to_owned(),
        None => String::new(),
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
