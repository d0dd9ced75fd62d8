//! The backups a restore (`--crash restore`) chooses from: every durable state the data dir went
//! through, as the power-loss model saw it after each sync that changed it. Each is consistent in
//! the only sense a runtime is owed (§7-6): what a power loss at that instant would have left, so
//! a runtime that recovers from a power loss recovers from it. A nightly snapshot and a replica
//! that ships every few hundred milliseconds are both one of them, taken some time before the
//! loss.

use super::shadow::Tree;
use crate::model::crash::Lag;
use std::ffi::OsStr;
use std::path::Path;
use std::time::{Duration, Instant};

/// How many states are kept, newest last: older ones are dropped (a lag past them takes the
/// oldest kept, and says how far back it really went).
const KEPT: usize = 256;

#[derive(Debug)]
struct Backup {
    at: Instant,
    tree: Tree,
}

#[derive(Debug, Default)]
pub(super) struct Backups(Vec<Backup>);

/// The backup a restore took: how many durable changes and how long before the kill it was made.
pub(super) struct Chosen<'a> {
    pub(super) tree: &'a Tree,
    pub(super) back: u32,
    pub(super) age: Duration,
}

impl Backups {
    /// The durable state after a sync: kept when it differs from the last one kept.
    pub(super) fn note(&mut self, tree: Tree) {
        if self.0.last().is_some_and(|last| last.tree == tree) {
            return;
        }
        if self.0.len() == KEPT {
            self.0.remove(0);
        }
        self.0.push(Backup { at: Instant::now(), tree });
    }

    /// The backup `lag` before `now` (the kill): `Syncs(n)` the state n changes before the last
    /// one, `Millis(t)` the newest one at least t old; the oldest kept when none is that old.
    pub(super) fn choose(&self, lag: Lag, now: Instant) -> Option<Chosen<'_>> {
        let last = self.0.len().checked_sub(1)?;
        let index = match lag {
            Lag::Syncs(n) => last.saturating_sub(n as usize),
            Lag::Millis(ms) => {
                let horizon = now.checked_sub(Duration::from_millis(ms));
                let old_enough = |b: &&Backup| horizon.is_some_and(|h| b.at <= h);
                self.0.iter().rposition(|b| old_enough(&b)).unwrap_or(0)
            }
        };
        let backup = &self.0[index];
        Some(Chosen { tree: &backup.tree, back: (last - index) as u32, age: now.duration_since(backup.at) })
    }
}

/// What the restored dir lacks or holds otherwise than the dir at the kill, a line per file or
/// directory, relative to the data dir (`runtime.sqlite3-wal: 8272 bytes at the kill, 4120 in the
/// backup`).
pub(super) fn differences(at_kill: &Path, backup: &Tree, prefix: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(at_kill) else { return Vec::new() };
    let mut said = Vec::new();
    for entry in entries.flatten() {
        let (name, path) = (entry.file_name(), entry.path());
        let shown = prefix.join(&name).display().to_string();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        said.extend(difference(&path, &name, &shown, is_dir, backup, prefix));
    }
    said.sort();
    said
}

fn difference(path: &Path, name: &OsStr, shown: &str, is_dir: bool, backup: &Tree, prefix: &Path) -> Vec<String> {
    match (is_dir, backup.files.get(name), backup.dirs.get(name)) {
        (true, _, Some(sub)) => differences(path, sub, &prefix.join(name)),
        (true, _, None) => vec![format!("{shown}/: not in the backup")],
        (false, Some(kept), _) => {
            let now = std::fs::read(path).unwrap_or_default();
            match now == *kept {
                true => Vec::new(),
                false => vec![format!("{shown}: {} bytes at the kill, {} in the backup", now.len(), kept.len())],
            }
        }
        (false, None, _) => vec![format!("{shown}: not in the backup")],
    }
}

#[cfg(test)]
mod tests {
    use super::{Backups, Tree};
    use crate::model::crash::Lag;
    use std::time::{Duration, Instant};

    fn tree(byte: u8) -> Tree {
        let mut tree = Tree::default();
        tree.files.insert("f".into(), vec![byte]);
        tree
    }

    #[test]
    fn a_lag_counts_back_durable_changes_or_time_and_stops_at_the_oldest() {
        let mut backups = Backups::default();
        for byte in [0, 1, 1, 2, 3] {
            backups.note(tree(byte)); // the repeated state is one change, not two
        }
        let now = Instant::now();
        let chosen = backups.choose(Lag::Syncs(1), now).unwrap();
        assert_eq!((chosen.tree, chosen.back), (&tree(2), 1));
        let chosen = backups.choose(Lag::Syncs(9), now).unwrap();
        assert_eq!((chosen.tree, chosen.back), (&tree(0), 3));
        // Every state is younger than a minute: the oldest kept is the one taken.
        let chosen = backups.choose(Lag::Millis(60_000), now).unwrap();
        assert_eq!(chosen.tree, &tree(0));
        // Every state is older than nothing: the newest.
        let chosen = backups.choose(Lag::Millis(1), now + Duration::from_secs(1)).unwrap();
        assert_eq!((chosen.tree, chosen.back), (&tree(3), 0));
    }
}
