//! The standard scenarios, embedded in the library (and so in the `killpoint` binary): an installed
//! `killpoint` certifies from any directory, and a crate that depends on `killpoint` by version
//! gets them without a checkout. `build.rs` lists `scenarios/*.toml` at build time.
//!
//! [`ScenarioSet`] is what a run certifies: the standard scenarios, a user's directories, or both.

use crate::scenario::embedded::{DIR, FILES};
use crate::scenario::{Scenario, ScenarioError};
use std::path::{Path, PathBuf};

/// Every standard scenario, parsed, in file order; errors in place (none ship: a test says so).
pub fn load() -> Vec<Result<Scenario, ScenarioError>> {
    FILES.iter().map(|(file, text)| Scenario::parse(&Path::new(DIR).join(file), text)).collect()
}

/// Which scenarios a run certifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSet {
    /// The embedded standard scenarios.
    pub standard: bool,
    /// Directories whose `*.toml` files are scenarios too. A file named like a standard scenario
    /// takes its place (a project may pin its own version of one).
    pub dirs: Vec<PathBuf>,
}

impl ScenarioSet {
    /// The standard scenarios alone.
    pub fn standard() -> ScenarioSet {
        ScenarioSet { standard: true, dirs: Vec::new() }
    }

    /// One directory's scenarios alone.
    pub fn dir(dir: impl Into<PathBuf>) -> ScenarioSet {
        ScenarioSet { standard: false, dirs: vec![dir.into()] }
    }

    /// The standard scenarios and those in `dirs`.
    pub fn standard_and(dirs: impl IntoIterator<Item = PathBuf>) -> ScenarioSet {
        ScenarioSet { standard: true, dirs: dirs.into_iter().collect() }
    }

    /// Every scenario of the set, sorted by name; a file that does not parse is an error in place,
    /// so one bad file does not hide the others. `Err` when a directory cannot be read.
    pub fn load(&self) -> Result<Vec<Result<Scenario, ScenarioError>>, String> {
        let mut all: Vec<Result<Scenario, ScenarioError>> = if self.standard { load() } else { Vec::new() };
        for dir in &self.dirs {
            let found = Scenario::load_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
            for scenario in found {
                let name = name_of(&scenario);
                // The later directory wins over the standard set and over earlier directories.
                all.retain(|s| name_of(s) != name);
                all.push(scenario);
            }
        }
        all.sort_by_key(name_of);
        Ok(all)
    }
}

fn name_of(scenario: &Result<Scenario, ScenarioError>) -> String {
    match scenario {
        Ok(s) => s.name.clone(),
        Err(e) => e.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_standard_scenario_is_embedded_and_parses() {
        let on_disk = Scenario::load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")).unwrap();
        assert_eq!(FILES.len(), on_disk.len());
        for s in load() {
            let s = s.unwrap_or_else(|e| panic!("{e}"));
            assert!(s.path.starts_with(DIR), "{}", s.path.display());
            assert!(crate::scenario::embedded::text_of(&s.path).is_some());
        }
    }

    #[test]
    fn a_directory_adds_to_the_standard_set_and_replaces_a_namesake() {
        let dir = tempfile::tempdir().unwrap();
        let (name, text) = FILES[0];
        std::fs::write(dir.path().join(name), text).unwrap();
        std::fs::write(dir.path().join("zz_mine.toml"), text).unwrap();
        let all = ScenarioSet::standard_and([dir.path().to_owned()]).load().unwrap();
        assert_eq!(all.len(), FILES.len() + 1);
        let first = all[0].as_ref().unwrap();
        assert!(first.path.starts_with(dir.path()), "the directory's file replaces the standard one");
        let only = ScenarioSet::dir(dir.path()).load().unwrap();
        assert_eq!(only.len(), 2);
    }
}
