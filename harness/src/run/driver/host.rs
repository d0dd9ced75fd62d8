//! Where the runtime lives since the last restore (`--crash restore`): the data dir of its new
//! host, and the signal its first start there is given. Kept apart from the restore itself
//! (`rebuild.rs`), which the driver's state must not import.

use std::path::PathBuf;

/// The variable that tells an incarnation it starts on a restored backup (CONTRACT.md section
/// 13): its value names the restore, the same for no two restores of a run.
pub const RESTORED_VARIABLE: &str = "KILLPOINT_RESTORED";

/// Where the runtime lives since the last restore: its data dir, and whether the next start is
/// the first on it (the one the restore signal is given to).
#[derive(Debug, Clone)]
pub(super) struct Host {
    pub(super) data: PathBuf,
    pub(super) signal: Option<String>,
}
