//! `killpoint list`: the tables scenarios/README.md documents, printed from the code.

use super::Usage;
use crate::model::boundary::{Boundary, Site};
use crate::model::invariant::Invariant;
use fake_tool::ToolKind;
use std::path::Path;
use std::process::ExitCode;

/// Which table `killpoint list` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// Where faults land (`[[fault]]` `at`).
    Boundaries,
    /// The provider's tools and their kinds (`[[operation]]` `tool`).
    Tools,
    /// What the checker proves (`[[catches]]` `invariants`).
    Invariants,
    /// The reference runtime's broken variants (`[[catches]]` `broken`).
    Variants,
    /// The standard scenarios `certify` runs (a pytest plugin's items, one per name).
    Scenarios,
}

/// `killpoint list`: the tables of scenarios/README.md, from the code. `runtime` is, for
/// `variants`, the reference runtime to ask (default: beside this binary; without one, the list
/// this killpoint was built with).
pub fn list(table: Table, runtime: Option<&Path>) -> Result<ExitCode, Usage> {
    let rows: Vec<(String, String)> = match table {
        Table::Boundaries => boundaries(),
        Table::Tools => tools(),
        Table::Invariants => Invariant::ALL.iter().map(|i| (i.as_str().to_owned(), i.summary().to_owned())).collect(),
        Table::Variants => {
            let variants = match runtime.map(Path::to_path_buf).or_else(crate::run::incarnation::reference_runtime) {
                Some(program) => crate::model::variants::of(&program)?,
                None => {
                    errln!(
                        "note: no reference runtime beside this binary (`cargo install --path harness` installs killpoint alone): the variants of the one killpoint was built with"
                    );
                    crate::model::variants::built_in()
                }
            };
            variants.into_iter().map(|v| (v.name, v.description)).collect()
        }
        Table::Scenarios => crate::scenario::standard::load()
            .into_iter()
            .filter_map(Result::ok)
            .map(|s| (s.name, s.description.lines().next().unwrap_or_default().to_owned()))
            .collect(),
    };
    let header = match table {
        Table::Boundaries => format!("{:<88}  seen by", "where (CONTRACT.md section 7)"),
        Table::Tools => format!("{:<28}  what the runtime owes after an unknown outcome", "kind"),
        Table::Invariants => "what it proves".to_owned(),
        Table::Variants => "what it gets wrong".to_owned(),
        Table::Scenarios => "what it does".to_owned(),
    };
    let width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0).max(4);
    outln!("{:<width$}  {header}", "name");
    for (name, what) in rows {
        outln!("{name:<width$}  {what}");
    }
    Ok(ExitCode::SUCCESS)
}

fn boundaries() -> Vec<(String, String)> {
    Boundary::ALL
        .iter()
        .map(|b| {
            let who = match b.site() {
                Site::Probe => "runtime probe",
                Site::Provider => "provider",
                Site::Client => "the harness, as client",
            };
            (b.as_str().to_owned(), format!("{:<88}  {who}", b.summary()))
        })
        .collect()
}

fn tools() -> Vec<(String, String)> {
    ToolKind::ALL
        .iter()
        .map(|&k| {
            let owed = match k {
                ToolKind::IdempotentByKey | ToolKind::NonIdempotentWithLookup => {
                    "look up; retry with the same key if not found"
                }
                ToolKind::NonIdempotentNoLookup => "pause (UNKNOWN) for an operator; never retry",
                ToolKind::SafelyRepeatable => "retry",
            };
            (k.tool_name().to_owned(), format!("{:<28}  {owed}", k.as_str()))
        })
        .collect()
}
