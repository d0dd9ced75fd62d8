//! Arming the faults where they fire: which the world stops the runtime at, which the tracer
//! does, which only the probe can reach, and the permissions a fault withdraws.

use super::record::Hit;
use crate::model::boundary::Boundary;
use crate::run::built::Fired;
use crate::run::traced::{BoundaryFault, Tracing};
use crate::scenario::{Action, Anchor, Fault, Revoke, Scenario};
use fake_tool::{ConsumerHold, FaultResponse, ProviderFault, Revocation, Subject, World};

/// Arms every fault of the scenario where it fires, once the first incarnation said whether it
/// has the probe (`probe`): in the world, and with a tracer and no probe, in the tracer. Returns
/// how each fault stands: not reached yet, or out of reach without the probe.
pub(super) fn arm_faults(world: &World, traced: Option<&Tracing>, scenario: &Scenario, probe: bool) -> Vec<Hit> {
    let tracer_reaches = traced.is_some() && !probe;
    arm(world, scenario, probe, tracer_reaches, |_| true);
    if let Some(traced) = traced.filter(|_| tracer_reaches) {
        let at_syscalls = scenario.faults.iter().enumerate().filter(|(_, f)| by_tracer(f)).map(|(index, f)| {
            let at = Anchor::at(f.at, f.operation.clone(), f.occurrence);
            BoundaryFault { index, at, freeze: f.action == Action::Freeze }
        });
        traced.arm_boundaries(at_syscalls.collect());
    }
    if let Some(traced) = traced {
        traced.faults_armed();
    }
    standing(scenario, probe, traced.is_some())
}

/// Arms in the world of a run going on from a crash state the faults its prefix did not fire
/// (`fired`): a depth-2 case's second kill, where the state is the one its first kill left. The
/// world kept the rest as they were left; one armed again is the same fault under the same key (a
/// call or a receipt the world has counted past is never reached again). Returns how each fault
/// stands, as [`arm_faults`] does (those fired are set from `fired` by the caller).
pub(super) fn arm_unfired(world: &World, scenario: &Scenario, probe: bool, traced: bool, fired: &[Fired]) -> Vec<Hit> {
    arm(world, scenario, probe, traced && !probe, |i| !fired.iter().any(|f| f.fault == i));
    standing(scenario, probe, traced)
}

/// How each fault stands before any is reached: not reached yet, or out of reach without the
/// probe (a run from a built state, whose world's faults were armed in the record run).
fn standing(scenario: &Scenario, probe: bool, traced: bool) -> Vec<Hit> {
    let tracer_reaches = traced && !probe;
    scenario
        .faults
        .iter()
        .map(|f| {
            let reached = reachable(scenario, f, probe) || (tracer_reaches && by_tracer(f));
            if reached { Hit::NotReached } else { Hit::NeedsProbe }
        })
        .collect()
}

/// Whether, without the probe, `killpoint-tracer` fires this fault: a kill or a freeze at a
/// boundary it reaches exactly at a system call (holding the call is freezing the runtime there),
/// not narrowed to an attempt (the tracer counts occurrences, not the runtime's attempt numbers).
fn by_tracer(fault: &Fault) -> bool {
    fault.at.at_syscall() && matches!(fault.action, Action::Kill | Action::Freeze) && fault.attempt.is_none()
}

/// Whether a fault can be reached at all with or without the probe (CONTRACT.md section 7).
fn reachable(scenario: &Scenario, fault: &Fault, probe: bool) -> bool {
    // Without the probe, `after_provider_success` is seen from outside as the provider's answer
    // to call `occurrence`. A fault at `after_dispatch` on the same operation spoils that view:
    // it takes a call whose answer is no success (the approximate kill fired on it and pre-empted
    // the exact one), and after it a lookup may find the effect without any call. No outside
    // point stands for the boundary then: it is not exercised, never "not reached".
    if fault.at == Boundary::AfterProviderSuccess
        && !probe
        && scenario.faults.iter().any(|g| g.at == Boundary::AfterDispatch && g.operation == fault.operation)
    {
        return false;
    }
    // Only the probe holds a runtime still at the boundary to freeze it there (or the tracer,
    // which `by_tracer` says).
    if fault.action == Action::Freeze {
        return probe;
    }
    match fault.at {
        // The harness is the client: it sees the answer whether or not the runtime has a probe.
        Boundary::AfterSubmit | Boundary::AfterDispatch => true,
        Boundary::AfterProviderSuccess | Boundary::AfterDeliverySend => probe || fault.attempt.is_none(),
        Boundary::BeforeDispatch | Boundary::AfterResultWrite | Boundary::AfterPolicyRevocation => probe,
    }
}

/// The permissions `fault` withdraws, for its operation's tenant (every actor).
pub(super) fn revocations(scenario: &Scenario, fault: &Fault) -> Vec<Revocation> {
    let op = scenario.operation(&fault.operation).expect("validated when the scenario was read");
    fault
        .revoke
        .iter()
        .map(|r| {
            let subject = match r {
                Revoke::Tool => Subject::Tool(op.tool.tool_name().to_owned()),
                Revoke::Destination(d) => Subject::Destination(d.clone()),
                Revoke::Operation => Subject::Operation(op.id.clone()),
            };
            Revocation { tenant: op.tenant.clone(), actor: None, subject }
        })
        .collect()
}

/// Arms the fake world for the faults it stops the runtime at (tagged with the fault's index):
/// `after_dispatch` always; without the probe, also the outside views of
/// `after_provider_success` and `after_delivery_send`.
fn arm(world: &World, scenario: &Scenario, probe: bool, tracer_reaches: bool, wanted: impl Fn(usize) -> bool) {
    for (i, fault) in scenario.faults.iter().enumerate().filter(|(i, _)| wanted(*i)) {
        let tag = i as u64;
        match fault.at {
            Boundary::AfterDispatch => world.arm_provider(ProviderFault {
                operation: fault.operation.clone(),
                call: fault.occurrence,
                effect: fault.effect,
                response: match fault.action {
                    // A freeze is refused at `after_dispatch` when the scenario is read.
                    Action::Kill | Action::Freeze => FaultResponse::Hold,
                    Action::Fail => FaultResponse::Status(fault.status.unwrap_or(503)),
                    Action::Reject => FaultResponse::Reject(fault.status.unwrap_or(422)),
                    Action::Drop => FaultResponse::Drop,
                    Action::Cut => FaultResponse::Cut,
                    Action::Garbage => FaultResponse::Garbage,
                    Action::NoRef => FaultResponse::NoRef,
                    Action::Delay => FaultResponse::Delay(fault.delay_ms),
                },
                tag,
                // A kill's revocations are the driver's, put in force when it kills (`revoke`);
                // any other action's are the provider's, when it receives the call: once either way.
                revocations: if fault.action == Action::Kill { Vec::new() } else { revocations(scenario, fault) },
            }),
            Boundary::AfterProviderSuccess
                if !(probe || tracer_reaches && by_tracer(fault)) && reachable(scenario, fault, probe) =>
            {
                world.arm_provider(ProviderFault {
                    operation: fault.operation.clone(),
                    call: fault.occurrence,
                    effect: true,
                    response: FaultResponse::AnswerAndSignal,
                    tag,
                    revocations: Vec::new(),
                })
            }
            Boundary::AfterDeliverySend if !probe && reachable(scenario, fault, probe) => {
                world.arm_consumer_hold(ConsumerHold {
                    operation: fault.operation.clone(),
                    destination: fault.destination.clone().expect("validated: delivery faults name a destination"),
                    receipt: fault.occurrence,
                    tag,
                })
            }
            _ => {}
        }
    }
}

/// At the end of a traced run without the probe: a kill at a commit boundary (`after_result_write`,
/// `after_policy_revocation`) that the tracer never reached is out of its reach, not the runtime's
/// fault. The tracer sees a commit only as a sync, or as the operation's next request to the world;
/// a runtime that never syncs makes neither for an operation the policy refused (which asks for
/// nothing more). Only the probe reaches the boundary then: it is not exercised, never failed.
pub(super) fn out_of_tracer_reach(scenario: &Scenario, mut hits: Vec<Hit>, tracer_reaches: bool) -> Vec<Hit> {
    if !tracer_reaches {
        return hits;
    }
    for (fault, hit) in scenario.faults.iter().zip(&mut hits) {
        let commit = matches!(fault.at, Boundary::AfterResultWrite | Boundary::AfterPolicyRevocation);
        if commit && by_tracer(fault) && *hit == Hit::NotReached {
            *hit = Hit::NeedsProbe;
        }
    }
    hits
}
