//! `killpoint run`: one scenario file, certified as `certify` does; against the reference runtime,
//! also its `[[catches]]` (each broken variant must be caught).

use super::certify::{Checklist, certify};
use super::setup::{artifacts_root, reports_writable, target, traced_options};
use super::{Output, Runtime, Usage};
use crate::model::crash::Crash;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::explore::Points;
use std::path::PathBuf;
use std::process::ExitCode;

/// `killpoint run`'s options.
#[derive(Debug, Clone)]
pub struct RunCommand {
    /// The scenario file.
    pub scenario: PathBuf,
    pub runtime: Runtime,
    pub output: Output,
    /// `--operations`: the scenario's workload this many times over.
    pub operations: u32,
    /// `--points`: `Syscalls` runs the runtime under killpoint-tracer.
    pub points: Points,
}

impl RunCommand {
    pub fn run(&self) -> Result<ExitCode, Usage> {
        reports_writable(&self.output)?;
        let target = target(&self.runtime)?;
        let scenario = Scenario::load(&self.scenario).map_err(|e| e.to_string())?;
        // The catches are proven against the reference runtime only: the runtime itself says whether
        // it has broken variants, and which (`--list-broken`); a misspelt one is the file's error.
        let variants = if scenario.catches.is_empty() || !target.args.is_empty() {
            Err(NEEDS_REFERENCE.to_owned())
        } else {
            crate::model::variants::of(&target.program).map_err(String::from)
        };
        if let Ok(known) = &variants {
            scenario.check_catches(known).map_err(|e| e.to_string())?;
        }
        let options =
            RunOptions { artifacts_root: artifacts_root(&self.output)?, ..traced_options(&self.runtime, self.points) };
        if scenario.needs_services() && options.services.is_empty() {
            return Err(format!(
                "{}: not run: no services declared (it acts on the runtime's server beside the worker: --services FILE)",
                self.scenario.display()
            )
            .into());
        }
        let verdict = certify(
            std::slice::from_ref(&scenario.with_copies(self.operations)),
            &target,
            &options,
            &self.output,
            None,
            Checklist::Shown,
        );
        if scenario.catches.is_empty() {
            return Ok(verdict);
        }
        if let Err(why) = variants {
            // Said once, here, where the catches would have been told.
            outln!("[[catches]] not run: {why}");
            return Ok(verdict);
        }
        Ok(if all_caught(&scenario, &target, &options) { verdict } else { ExitCode::FAILURE })
    }
}

/// Why the catches are not run with runtime arguments: they are the variants' own.
const NEEDS_REFERENCE: &str =
    "they need the reference runtime with no runtime arguments (it lists its variants with --list-broken)";

/// Runs each of the scenario's `[[catches]]` and says whether its variant was caught.
fn all_caught(scenario: &Scenario, target: &Target, options: &RunOptions) -> bool {
    let mut all_caught = true;
    for catch in &scenario.catches {
        // Under the crash it names: a durability mistake only shows when the machine goes down.
        let options = RunOptions { crash: catch.crash, ..options.clone() };
        match crate::trials::caught_by(scenario, target, &options, &catch.broken, &catch.invariants) {
            Ok(()) => outln!(
                "caught: --broken {} violates {}{}",
                catch.broken,
                catch.invariants.join(", "),
                match catch.crash {
                    Crash::Process => "",
                    Crash::Machine => " in a machine crash",
                    Crash::Restore => " after a restore",
                }
            ),
            Err(why) => {
                all_caught = false;
                errln!("NOT CAUGHT: {why}");
            }
        }
    }
    all_caught
}
