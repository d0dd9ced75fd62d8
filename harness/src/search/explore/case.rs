//! A case: one crash schedule over a workload, and the scenario it is (what `killpoint run`
//! replays); the workload is the scenario without its hand-placed kills.

use super::point::Point;
use crate::model::boundary::Boundary;
use crate::scenario::{Action, Fault, Outcome, Revoke, Scenario};
use fake_tool::ToolKind;

/// One crash schedule: a kill at each point, in order (depth 1: one; depth 2: a point of the
/// recovery after the first), optionally withdrawing a permission with the first kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub kills: Vec<Point>,
    /// Permissions withdrawn at the first kill (`kill+revoke` cases).
    pub revoke: Vec<Revoke>,
    /// The first point freezes the runtime (SIGSTOP, a replacement takes over, then the frozen one
    /// is resumed: CONTRACT.md §9) instead of killing it; with no boundary kill, the first system
    /// call (just before a request: the tracer holds it there).
    pub freeze: bool,
    /// Kills at system-call crash points (`--points syscalls`), instead of boundary kills.
    pub syscalls: Vec<crate::scenario::SyscallFault>,
}

impl Case {
    /// A stable name: `after_dispatch.charge.1`, `before_dispatch.charge.1+revoke_operation`,
    /// `after_dispatch.charge.1/after_provider_success.charge.2`.
    pub fn name(&self) -> String {
        let syscalls = self.syscalls.iter().map(|f| {
            let from = match (&f.since, &f.operation) {
                (Some(a), _) => format!("{}.{}.{}", a.boundary, a.operation, a.occurrence),
                (None, Some(op)) => format!("{}.{op}", f.incarnation()),
                (None, None) => f.incarnation().to_string(),
            };
            format!("syscall.{from}.{}.{}.{}", f.kind.name(), f.occurrence, f.when.name())
        });
        if self.kills.is_empty() && self.syscalls.is_empty() {
            return "no_kill".to_owned();
        }
        // A boundary kill first, then the system-call kill of its recovery (depth 2), or kills at
        // system calls only.
        let mut name = self.kills.iter().map(Point::slug).chain(syscalls).collect::<Vec<_>>().join("/");
        if self.freeze {
            name.push_str("+freeze");
        }
        for r in &self.revoke {
            name.push_str(&match r {
                Revoke::Tool => "+revoke_tool".to_owned(),
                Revoke::Operation => "+revoke_operation".to_owned(),
                Revoke::Destination(d) => format!("+revoke_{d}"),
            });
        }
        name
    }

    /// Whether every kill of this schedule is a system call (no boundary kill, freeze or revoke):
    /// what a crash state built by the tracer can stand for.
    pub fn syscalls_only(&self) -> bool {
        self.kills.is_empty() && self.revoke.is_empty() && !self.freeze
    }

    /// Whether this schedule is one plain kill, at a system call or a boundary: a depth-1 case
    /// whose recovery's states can be built (a freeze leaves a frozen incarnation beside the
    /// recovery, and a revocation is not part of a state's scenario).
    pub fn single_kill(&self) -> bool {
        self.kills.len() + self.syscalls.len() == 1 && self.revoke.is_empty() && !self.freeze
    }

    /// The depth-1 case this one goes on from, when its last kill is a system call of that
    /// case's recovery and that case is one plain kill (`None` otherwise).
    pub fn parent(&self) -> Option<Case> {
        let (_, before) = self.syscalls.split_last()?;
        let parent = Case { syscalls: before.to_vec(), ..self.clone() };
        parent.single_kill().then_some(parent)
    }

    /// The depth-1 case this one goes on from, when both its kills are at boundaries (the second
    /// in the first's recovery) and the first is one plain kill (`None` otherwise).
    pub fn boundary_parent(&self) -> Option<Case> {
        let [first, _] = self.kills.as_slice() else { return None };
        let parent = Case { kills: vec![first.clone()], ..self.clone() };
        (self.syscalls.is_empty() && parent.single_kill()).then_some(parent)
    }

    /// The workload with this schedule's kills: a scenario like any other, which `killpoint run`
    /// replays. Expectations follow the kills: a tool with no lookup killed after its call may
    /// have acted, so it must pause; an operation cancelled before its first call must be refused.
    pub fn scenario(&self, workload: &Workload) -> Scenario {
        let mut scenario = workload.base.clone();
        scenario.syscall_faults.extend(self.syscalls.iter().cloned());
        if self.freeze
            && self.kills.is_empty()
            && let Some(first) = scenario.syscall_faults.get_mut(workload.base.syscall_faults.len())
        {
            first.action = crate::scenario::SyscallAction::Freeze;
        }
        for (i, point) in self.kills.iter().enumerate() {
            let mut fault = point.kill();
            if i == 0 {
                fault.revoke = self.revoke.clone();
                if self.freeze {
                    fault.action = Action::Freeze;
                }
            }
            scenario.faults.push(fault);
        }
        // Operations in flight beside a killed one: a kill lands wherever they are, possibly
        // between a write-ahead and its request, so a tool with no lookup may have to pause.
        let waves = workload.base.waves();
        let beside: Vec<String> = waves
            .iter()
            .filter(|w| w.len() > 1 && w.iter().any(|o| self.kills.iter().any(|p| p.operation == o.id)))
            .flat_map(|w| w.iter().map(|o| o.id.clone()))
            .collect();
        for op in &mut scenario.operations {
            // A system-call kill can land anywhere, between any operation's write-ahead and its
            // request too: a tool without lookup may have to pause.
            if !self.syscalls.is_empty()
                && op.tool == ToolKind::NonIdempotentNoLookup
                && op.expect == Outcome::Succeeded
            {
                op.expect = Outcome::SucceededOrPaused;
            }
            let killed_after_call = self.kills.iter().any(|p| {
                p.operation == op.id && matches!(p.at, Boundary::AfterDispatch | Boundary::AfterProviderSuccess)
            });
            if op.tool == ToolKind::NonIdempotentNoLookup && op.expect == Outcome::Succeeded {
                if killed_after_call {
                    op.expect = Outcome::Paused;
                } else if beside.contains(&op.id) {
                    op.expect = Outcome::SucceededOrPaused;
                }
            }
            if self.revoke.contains(&Revoke::Operation) && self.kills[0].operation == op.id {
                op.expect = Outcome::Refused;
            }
        }
        scenario.name = format!("{}.{}", workload.base.name, self.name().replace(['/', '+'], "."));
        scenario
    }
}

/// A workload ready to explore: the scenario without its hand-placed kills.
#[derive(Debug, Clone)]
pub struct Workload {
    pub base: Scenario,
    /// Hand-placed kills (and freezes) that were dropped.
    pub dropped: usize,
    /// World faults kept (provider answers, lookups, policy, consumers).
    pub kept: usize,
}

impl Workload {
    pub fn of(scenario: &Scenario) -> Workload {
        let mut base = scenario.clone();
        let before = base.faults.len();
        let (dropped_kills, kept): (Vec<Fault>, Vec<Fault>) =
            base.faults.iter().cloned().partition(|f| matches!(f.action, Action::Kill | Action::Freeze));
        base.faults = kept;
        // Kills and freezes at system calls are hand-placed too: the exploration places its own.
        let dropped_syscalls = std::mem::take(&mut base.syscall_faults).len();
        base.catches.clear();
        // An expectation that only a dropped kill explains goes back to `succeeded`: without it,
        // the SMS is not left unknown, the revoked tool is not refused.
        for op in &mut base.operations {
            let touched_by_kept = base.faults.iter().any(|f| f.operation == op.id || !f.revoke.is_empty());
            let killed = dropped_kills.iter().any(|f| f.operation == op.id);
            let refused_by_kill = dropped_kills.iter().any(|f| {
                let killed = scenario.operation(&f.operation).expect("faults name the scenario's operations");
                killed.tenant == op.tenant
                    && f.revoke.iter().any(|r| match r {
                        Revoke::Tool => killed.tool == op.tool,
                        Revoke::Operation => killed.id == op.id,
                        Revoke::Destination(_) => false,
                    })
            });
            let explained = match op.expect {
                Outcome::Paused => killed,
                Outcome::Refused => refused_by_kill,
                _ => false,
            };
            if explained && !touched_by_kept {
                op.expect = Outcome::Succeeded;
            }
        }
        let dropped = before - base.faults.len() + dropped_syscalls;
        let kept = base.faults.len()
            + base.lookup_faults.len()
            + base.model_faults.len()
            + base.policy_faults.len()
            + base.consumer_faults.len();
        Workload { base, dropped, kept }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{TWO, point, workload};
    use super::*;

    #[test]
    fn a_workload_drops_kills_and_the_expectations_only_they_explain() {
        let w = workload(TWO);
        assert_eq!((w.dropped, w.kept), (1, 0));
        assert!(w.base.faults.is_empty());
        // `paused` came from the dropped kill: without it the charge succeeds.
        assert_eq!(w.base.operation("charge").map(|o| o.expect), Some(Outcome::Succeeded));
    }

    #[test]
    fn a_second_boundary_kill_goes_on_from_its_first_only_when_that_is_one_plain_kill() {
        let first = point(Boundary::AfterDispatch, "charge", 1);
        let second = point(Boundary::BeforeDispatch, "charge", 2);
        let case = Case { kills: vec![first.clone(), second], revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
        let parent = Case { kills: vec![first], ..case.clone() };
        assert_eq!(case.boundary_parent(), Some(parent.clone()));
        assert_eq!(parent.boundary_parent(), None, "one kill: a depth-1 case");
        assert_eq!(Case { freeze: true, ..case.clone() }.boundary_parent(), None, "a freeze first: re-run");
        assert_eq!(
            Case { revoke: vec![Revoke::Operation], ..case.clone() }.boundary_parent(),
            None,
            "a revocation: re-run"
        );
    }

    #[test]
    fn expectations_follow_the_kills() {
        let w = workload(TWO);
        let at_sms = Case {
            kills: vec![point(Boundary::AfterDispatch, "sms", 1)],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        let s = at_sms.scenario(&w);
        assert_eq!(s.operation("sms").map(|o| o.expect), Some(Outcome::Paused));
        assert_eq!(s.faults.len(), 1);
        // A kill beside the SMS may cut its request off: succeeded, or paused.
        let beside = Case {
            kills: vec![point(Boundary::BeforeDispatch, "charge", 1)],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        assert_eq!(beside.scenario(&w).operation("sms").map(|o| o.expect), Some(Outcome::SucceededOrPaused));
        let cancelled = Case {
            kills: vec![point(Boundary::BeforeDispatch, "charge", 1)],
            revoke: vec![Revoke::Operation],
            freeze: false,
            syscalls: Vec::new(),
        };
        let s = cancelled.scenario(&w);
        assert_eq!(s.operation("charge").map(|o| o.expect), Some(Outcome::Refused));
        assert_eq!(s.faults[0].revoke, vec![Revoke::Operation]);
    }

    #[test]
    fn names_are_stable_and_say_the_schedule() {
        let case = Case {
            kills: vec![
                point(Boundary::AfterDispatch, "charge", 1),
                point(Boundary::AfterProviderSuccess, "charge", 2),
            ],
            revoke: Vec::new(),
            freeze: false,
            syscalls: Vec::new(),
        };
        assert_eq!(case.name(), "after_dispatch.charge.1/after_provider_success.charge.2");
        let none = Case { kills: Vec::new(), revoke: Vec::new(), freeze: false, syscalls: Vec::new() };
        assert_eq!(none.name(), "no_kill");
    }
}
