//! `killpoint check`: scenario files validated without running anything (for editors and
//! pre-commit hooks).

use super::Usage;
use crate::scenario::Scenario;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `killpoint check`: every file parsed and checked, every error printed, nothing run. `runtime`
/// is the reference runtime whose --broken variants `[[catches]]` may name (default: beside this
/// binary, if there).
pub fn check(paths: &[PathBuf], runtime: Option<&Path>) -> Result<ExitCode, Usage> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let found = Scenario::load_dir(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            files.extend(found);
        } else {
            files.push(Scenario::load(path));
        }
    }
    let variants = runtime
        .map(Path::to_path_buf)
        .or_else(crate::run::incarnation::reference_runtime)
        .map(|p| crate::model::variants::of(&p));
    let mut bad = 0;
    for file in &files {
        let checked = file.as_ref().map_err(|e| e.clone()).and_then(|s| match &variants {
            Some(Ok(known)) => s.check_catches(known),
            _ => Ok(()),
        });
        match checked {
            Ok(()) => {}
            Err(e) => {
                bad += 1;
                errln!("{e}");
            }
        }
    }
    if let Some(Err(why)) = &variants
        && runtime.is_some()
    {
        return Err(why.why.clone().into());
    }
    if variants.is_none() && files.iter().any(|f| f.as_ref().is_ok_and(|s| !s.catches.is_empty())) {
        errln!("note: [[catches]] variant names not checked: no reference runtime beside this binary (give --runtime)");
    }
    outln!("{} file(s) checked, {} with errors", files.len(), bad);
    Ok(if bad == 0 { ExitCode::SUCCESS } else { ExitCode::from(2) })
}
