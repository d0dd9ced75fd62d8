//! The reference runtime's deliberately broken variants, asked of the runtime itself
//! (`killpoint-runtime --list-broken`): the list lives in one place, `src/broken.rs`, and the
//! harness cannot drift from it.

use std::path::Path;
use std::process::{Command, Stdio};

/// One broken variant: the name given to `--broken`, and what it gets wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub description: String,
}

/// The variants `program` has, from `program --list-broken`. `Err` for a runtime that has none
/// (any runtime but the reference one), saying what it answered.
pub fn of(program: &Path) -> Result<Vec<Variant>, String> {
    let output = Command::new(program)
        .arg("--list-broken")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `{} --list-broken`: {e}", program.display()))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let variants: Vec<Variant> = text
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(name, description)| Variant { name: name.to_owned(), description: description.to_owned() })
        .collect();
    if !output.status.success() || variants.is_empty() {
        return Err(format!(
            "`{} --list-broken` lists no broken variants ({}): only the reference runtime (killpoint-runtime) has them",
            program.display(),
            output.status
        ));
    }
    Ok(variants)
}
