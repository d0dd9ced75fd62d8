//! A re-run case with nothing for the tracer to do runs untraced.
//!
//! Over system calls every run is traced (`RunOptions::syscalls`), so a case re-run from the start
//! — a kill at a boundary the world or the client holds (`after_submit`, `after_dispatch`,
//! `after_delivery_send`), whose state no record run builds — paid a ptrace stop at every system
//! call of every incarnation: 84–299 ms a case in `explore concurrent_wave --no-probe --points
//! syscalls`, against 20–57 ms for the same cases untraced. Untraced, such a case is armed exactly
//! as traced (`run::driver::arming`: the world holds those answers, the client the `202`, with the
//! tracer or without), and the judge reads nothing of the tracer's for it: no `[[syscall_fault]]`
//! to address, no sync to count (a process crash), no schedule to keep.
//!
//! What a traced re-run gives besides is kept: a run whose recovery becomes depth 2's points stays
//! traced (`keep_runs`), and so does one asked to keep the crash state each kill leaves
//! (`RunOptions::keep_kills`, `explore` keeping its failures): only the tracer can say that every
//! request sent before the kill reached the world, and a failure found in a race may not come back
//! in a second, traced run. `bench` and the tests that keep no failure run such cases untraced.

use super::built::Played;
use super::case::{Case, Workload};
use super::finding::run_case;
use crate::model::crash::Crash;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use crate::scenario::Scenario;

/// Re-runs `case` from the start: untraced when the tracer has nothing to do in it.
pub(super) fn rerun(
    workload: &Workload,
    case: &Case,
    target: &Target,
    options: &RunOptions,
    keep_runs: bool,
) -> std::io::Result<Played> {
    let plain = (!keep_runs).then(|| untraced(&case.scenario(workload), options)).flatten();
    let (finding, run) = run_case(workload, case, target, plain.as_ref().unwrap_or(options))?;
    Ok((finding, run, None))
}

/// `options` without the tracer, when a run of `scenario` needs it for nothing: a process crash
/// with no `[[syscall_fault]]`, no controlled schedule, no crash state to keep after a kill, and
/// every fault where the world, the client or the probe stops the runtime as it would traced
/// (`None`: it stays traced).
fn untraced(scenario: &Scenario, options: &RunOptions) -> Option<RunOptions> {
    let tracer_holds = |at: crate::model::boundary::Boundary| !options.probe && at.at_syscall();
    let free = options.syscalls
        && options.crash == Crash::Process
        && scenario.syscall_faults.is_empty()
        && scenario.schedule.is_none()
        && !options.keep_kills
        && !scenario.faults.iter().any(|f| tracer_holds(f.at));
    free.then(|| RunOptions { syscalls: false, ..options.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::boundary::Boundary;

    fn wave() -> Scenario {
        Scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/concurrent_wave.toml"))
            .expect("scenarios/concurrent_wave.toml")
    }

    fn traced_black_box() -> RunOptions {
        RunOptions { syscalls: true, probe: false, ..RunOptions::default() }
    }

    fn killed_at(at: Boundary) -> Scenario {
        let mut scenario = wave();
        scenario.faults.truncate(1);
        scenario.faults[0].at = at;
        scenario
    }

    #[test]
    fn a_kill_the_world_or_the_client_holds_runs_untraced() {
        for at in [Boundary::AfterSubmit, Boundary::AfterDispatch, Boundary::AfterDeliverySend] {
            let plain = untraced(&killed_at(at), &traced_black_box()).expect("untraced");
            assert!(!plain.syscalls, "{at:?}");
        }
    }

    #[test]
    fn a_kill_the_tracer_holds_stays_traced_without_the_probe() {
        for at in Boundary::AT_SYSCALL {
            assert!(untraced(&killed_at(at), &traced_black_box()).is_none(), "{at:?}");
            let probe = RunOptions { probe: true, ..traced_black_box() };
            assert!(untraced(&killed_at(at), &probe).is_some(), "with the probe, {at:?}");
        }
    }

    #[test]
    fn a_run_that_keeps_its_kills_crash_states_stays_traced() {
        let keeping = RunOptions { keep_kills: true, ..traced_black_box() };
        assert!(untraced(&killed_at(Boundary::AfterSubmit), &keeping).is_none());
    }

    #[test]
    fn a_machine_crash_or_an_untraced_explore_is_left_as_it_is() {
        let scenario = killed_at(Boundary::AfterDispatch);
        let machine = RunOptions { crash: Crash::Machine, ..traced_black_box() };
        assert!(untraced(&scenario, &machine).is_none());
        let plain = RunOptions { syscalls: false, ..traced_black_box() };
        assert!(untraced(&scenario, &plain).is_none());
    }
}
