//! The standard scenarios' texts, embedded in the library (and so in the `killpoint` binary) by
//! `build.rs`, which lists `scenarios/*.toml` at build time.
//!
//! Below both the parser (which reads an embedded file back for an error's line and column) and
//! `standard.rs` (which parses them): imports nothing of the crate.

use std::path::Path;

/// `(file name, text)` of every standard scenario, sorted by file name.
pub const FILES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/standard_scenarios.rs"));

/// The directory embedded scenarios are shown in: angle brackets, like `<stdin>`, because it is
/// not on disk (a user's `./scenarios/after_dispatch.toml` must not be taken for it).
pub const DIR: &str = "<standard>";

/// The embedded text of `path`, if it names a standard scenario (`<standard>/NAME.toml`).
pub fn text_of(path: &Path) -> Option<&'static str> {
    let name = path.strip_prefix(DIR).ok()?.to_str()?;
    FILES.iter().find(|(file, _)| *file == name).map(|(_, text)| *text)
}
