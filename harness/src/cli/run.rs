//! `killpoint run`: one scenario file, certified as `certify` does; against the reference runtime,
//! also its `[[catches]]` (each broken variant must be caught).

use super::certify::{Checklist, certify};
use super::setup::{artifacts_root, reports_writable, target, traced_options};
use super::{Output, Runtime, Usage};
use crate::model::crash::Crash;
use crate::run::built::kept::{self, Found, Kept};
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use crate::search::explore::Points;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
    /// `--rerun-prefix`: run the whole workload though a crash state is kept beside the file.
    pub rerun_prefix: bool,
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
        let scenario = scenario.with_copies(self.operations);
        let options = RunOptions { from_kept: self.kept_state(&scenario, &target, &options), ..options };
        if scenario.needs_services() && options.services.is_empty() {
            return Err(format!(
                "{}: not run: no services declared (it acts on the runtime's server beside the worker: --services FILE)",
                self.scenario.display()
            )
            .into());
        }
        let verdict = certify(std::slice::from_ref(&scenario), &target, &options, &self.output, None, Checklist::Shown);
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

impl RunCommand {
    /// The crash state kept beside the file (`explore` writes it with a case that failed from a
    /// built state), when it is valid for this run; said either way, so a reader knows whether
    /// the prefix ran.
    fn kept_state(&self, scenario: &Scenario, target: &Target, options: &RunOptions) -> Option<Arc<Kept>> {
        let found = kept::find(&self.scenario, &kept::Key::of(scenario, target, options.probe, options.crash));
        match found {
            Found::Nothing => None,
            Found::Unusable(why) => {
                outln!("running the whole workload: the crash state beside the file is not used ({why})\n");
                None
            }
            Found::Usable(_) if self.rerun_prefix => {
                outln!(
                    "running the whole workload (--rerun-prefix): the crash state kept beside the file is not used\n"
                );
                None
            }
            Found::Usable(kept) => {
                outln!(
                    "starting from the crash state kept in {} (the case's last kill, {}, with what the runtime, the world and the harness had done before it): only the recovery runs; --rerun-prefix runs the whole workload, as checking a fix to the steps before the kill needs\n",
                    kept.dir.display(),
                    kept.state.told()
                );
                Some(kept)
            }
        }
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
        // From the start: a kept state is the tested runtime's, not a variant's.
        let options = RunOptions { crash: catch.crash, from_kept: None, ..options.clone() };
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
