//! The power-loss model behind `--crash machine`: what a data dir holds after the machine (not
//! only the process) went down at a crash point, under the strict POSIX reading of durability.
//!
//! A process kill keeps the page cache: whatever `write` handed the kernel is there for the next
//! incarnation. A power loss keeps only what was synced:
//! - a file's bytes as of its last completed `fsync`/`fdatasync`/`sync_file_range` (a write
//!   through an fd opened `O_SYNC`/`O_DSYNC` counts as synced, and `sync`/`syncfs` sync everything);
//! - a name only if its directory was synced after the name was made (created, renamed to); a
//!   name unlinked or renamed away is still there, with its synced bytes, until then;
//! - nothing written after the last sync.
//!
//! The harness keeps this itself, from the tracer's points, while the tracer holds the runtime
//! stopped at each one: a copy of a file at its sync's `after` point, a listing of a directory at
//! its own ([`shadow`]). At the crash the data dir is rebuilt from those copies ([`restore`]), and
//! what it then holds is the new baseline: after a reboot everything on disk is durable.
//!
//! What the tracer cannot see is not modelled: writes through `mmap` and `msync`, `io_uring`,
//! hard links, a directory renamed. Bytes another thread writes while the one that synced is held
//! are copied with the sync (the model errs towards keeping, never towards losing).
//!
//! The interface is two calls: [`PowerLoss::record`] for every point (one call in the tracer's
//! answer loop), [`PowerLoss::restore`] after the kill and before the restart. A crash state built
//! at a point instead (explore's built states) takes [`PowerLoss::image`] there, and writes it out
//! as a case's data dir later: the same bytes the restore would have left.

mod backups;
mod restore;
mod shadow;

use crate::model::crash::Lag;
use crate::tracer::{Point, PointKind, When};
use backups::Backups;
use shadow::Shadow;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The durable state of one data dir as a run goes on, and the data dir a power loss would leave.
/// Shared by every incarnation's tracer task and the driver: it locks itself.
#[derive(Debug)]
pub struct PowerLoss {
    shadow: Mutex<Shadow>,
    /// Every durable state so far, for a restore (`--crash restore`) to take one that lags;
    /// `None` when no restore will ask (a copy per sync is not free).
    backups: Option<Mutex<Backups>>,
}

/// What a restore did: the backup it took (how far back) and what the new dir lacks.
#[derive(Debug, Clone)]
pub struct Restored {
    /// Durable changes between the backup and the kill.
    pub back: u32,
    /// How long before the kill the backup was taken.
    pub age: Duration,
    /// A line per file or directory the backup lacks or holds otherwise than the dir at the kill.
    pub lost: Vec<String>,
}

impl PowerLoss {
    /// Everything in `data_dir` now is taken as durable (a fresh dir, or one after a restore).
    pub fn new(data_dir: &Path) -> std::io::Result<PowerLoss> {
        Ok(PowerLoss { shadow: Mutex::new(Shadow::scan(data_dir)?), backups: None })
    }

    /// The model of a run whose kills are restores: it keeps every durable state, this first.
    pub fn keeping_backups(mut self) -> PowerLoss {
        let mut backups = Backups::default();
        backups.note(self.lock().durable_tree());
        self.backups = Some(Mutex::new(backups));
        self
    }

    /// One crash point the runtime passed (any incarnation, before its ready line too), while it
    /// is held there: a sync's `after` point copies what it made durable.
    pub fn record(&self, point: &Point) {
        let mut shadow = self.lock();
        shadow.record(point);
        let synced = point.kind == PointKind::Sync || (point.kind == PointKind::Durable && point.synced);
        if let (Some(backups), true) = (&self.backups, synced && point.when == When::After) {
            let durable = shadow.durable_tree();
            drop(shadow);
            backups.lock().unwrap_or_else(|p| p.into_inner()).note(durable);
        }
    }

    /// After the kill, before the restart on another host: `into` (a new directory) becomes the
    /// backup `lag` before now, and the model follows the runtime there (its baseline, as after
    /// a power loss). The old dir is left as the kill left it, for the evidence.
    pub fn restore_backup(&self, lag: Lag, into: &Path) -> std::io::Result<Restored> {
        let mut shadow = self.lock();
        if let Some(trouble) = shadow.trouble.take() {
            return Err(std::io::Error::other(format!("the power-loss model lost track: {trouble}")));
        }
        let none = || std::io::Error::other("no backup was taken: the model was not made to keep them");
        let mut backups = self.backups.as_ref().ok_or_else(none)?.lock().unwrap_or_else(|p| p.into_inner());
        let chosen = backups.choose(lag, Instant::now()).ok_or_else(none)?;
        let lost = backups::differences(shadow.root(), chosen.tree, Path::new(""));
        let (back, age) = (chosen.back, chosen.age);
        let tree = chosen.tree.clone();
        std::fs::create_dir_all(into)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot create {}: {e}", into.display())))?;
        restore::write(into, &tree)?;
        *shadow = Shadow::scan(into)?;
        backups.note(tree);
        Ok(Restored { back, age, lost })
    }

    /// After the kill, before the restart: the data dir becomes what a power loss at the kill
    /// would leave, and that is the new baseline. Returns what the power loss took (a line per
    /// file or name); `Err` names what could not be read or written.
    pub fn restore(&self) -> std::io::Result<Vec<String>> {
        let mut shadow = self.lock();
        if let Some(trouble) = shadow.trouble.take() {
            return Err(std::io::Error::other(format!("the power-loss model lost track: {trouble}")));
        }
        let root = shadow.root().to_path_buf();
        let durable = shadow.durable_tree();
        let lost = restore::lost(&root, &durable, Path::new(""));
        restore::rebuild(&root, &durable)?;
        *shadow = Shadow::scan(&root)?;
        Ok(lost)
    }

    /// What a power loss now would leave, kept apart from the data dir (which goes on changing):
    /// `Err` if the model lost track, as [`PowerLoss::restore`] would say.
    pub fn image(&self) -> std::io::Result<DurableImage> {
        let shadow = self.lock();
        if let Some(trouble) = &shadow.trouble {
            return Err(std::io::Error::other(format!("the power-loss model lost track: {trouble}")));
        }
        Ok(DurableImage(shadow.durable_tree()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shadow> {
        self.shadow.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The data dir a power loss at one point leaves, in memory: the synced names with their synced
/// bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct DurableImage(shadow::Tree);

impl DurableImage {
    /// Writes the image as the directory `dest` (which must not exist).
    pub fn write_to(&self, dest: &Path) -> std::io::Result<()> {
        std::fs::create_dir(dest)
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dest.display())))?;
        restore::write(dest, &self.0)
    }
}

#[cfg(test)]
mod tests;
