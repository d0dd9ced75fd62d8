//! Replaying a written case before saying it reproduces. A case whose operations share a wave is
//! written with its kill points, not with which other operation was mid-flight when the kill
//! landed: run again from the start, it may pass. So such a case is replayed [`REPLAYS`] times
//! (within a deadline) and told as "reproduced k of N replays", as is a case killed at
//! `after_submit` ([`timing_dependent`]). A case whose crash state was kept (explore, traced) is
//! replayed from it (`RunOptions::from_kept`), as its file is, and comes back every time. A case with one
//! operation in flight at a time, killed where the runtime waits for the harness or the world, runs
//! the same way each time, and one replay says what it violates.

use crate::judge::Verdict;
use crate::model::boundary::Boundary;
use crate::model::invariant::Invariant;
use crate::run::driver::{Run, RunOptions};
use crate::run::incarnation::Target;
use crate::scenario::Scenario;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Replays of a case with operations in flight together.
pub const REPLAYS: u32 = 5;

/// How long the replays of one command's failures may take in all; past it, the failures left are
/// said to be not replayed rather than replayed fewer times in silence.
pub const BUDGET: Duration = Duration::from_secs(120);

/// Whether `scenario` has operations in flight at once (a wave of more than one).
pub fn concurrent(scenario: &Scenario) -> bool {
    scenario.waves().iter().any(|w| w.len() > 1)
}

/// Whether a run of `scenario` may go otherwise when run again, so that one replay cannot say what
/// it violates: operations in flight together ([`concurrent`]), or a kill at `after_submit`. That
/// kill lands when the harness reads the `202`, while the runtime goes on with the operation:
/// whether its worker had committed the next step by then (a policy answer, say) is timing. A
/// stress run saw `explore` find `after_submit.charge.1` failing `--broken no-policy-recheck` and
/// its written file pass once.
pub fn timing_dependent(scenario: &Scenario) -> bool {
    concurrent(scenario) || scenario.faults.iter().any(|f| f.at == Boundary::AfterSubmit)
}

/// How a written case's replays went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replays {
    /// Replays run (fewer than asked once the deadline passed).
    pub ran: u32,
    /// Replays that failed with exactly the invariants `found`.
    pub reproduced: u32,
    /// The invariants the first failing replay violated (empty: none failed).
    pub violated: BTreeSet<Invariant>,
    /// They started from the crash state kept beside the case (`RunOptions::from_kept`).
    pub from_kept: bool,
}

/// Runs `scenario` up to `times` times while `until` has not passed, counting the replays that
/// violate exactly `found`. `keep` is given the first failing replay's verdict and run (to keep its
/// evidence); every other run is dropped with its directory.
pub fn replay(
    scenario: &Scenario,
    target: &Target,
    options: &RunOptions,
    found: &BTreeSet<Invariant>,
    (times, until): (u32, Instant),
    keep: &mut dyn FnMut(&Verdict, Run),
) -> Replays {
    let mut replays = Replays { from_kept: options.from_kept.is_some(), ..Replays::default() };
    while replays.ran < times && Instant::now() < until {
        replays.ran += 1;
        // A replay that cannot run (the machine is out of ports, …) is a replay that did not fail.
        let Ok((verdict, run)) = crate::judge::run_scenario(scenario, target, options) else { continue };
        if verdict.passed() {
            continue;
        }
        let violated = verdict.failed_invariants();
        if &violated == found {
            replays.reproduced += 1;
        }
        if replays.violated.is_empty() && !violated.is_empty() {
            replays.violated = violated;
            keep(&verdict, run);
        }
    }
    replays
}

impl Replays {
    /// The words before a replay command: `reproduced k of N replays`, or why there were none;
    /// `reproduce` when every replay from a kept crash state came back, as its file's runs will.
    pub fn told(&self) -> String {
        if self.from_kept && self.ran > 0 && self.reproduced == self.ran {
            format!("reproduce (from the crash state kept beside it: {} of {} replays)", self.reproduced, self.ran)
        } else if self.ran == 0 {
            format!("not replayed (the replays' budget of {} s was spent); replay it with", BUDGET.as_secs())
        } else {
            let from = if self.from_kept { " from the crash state kept beside it" } else { "" };
            format!("reproduced {} of {} replays{from}", self.reproduced, self.ran)
        }
    }
}
