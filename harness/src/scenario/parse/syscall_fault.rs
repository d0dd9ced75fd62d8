//! The `[[syscall_fault]]` tables: a kill or a freeze at a system call, addressed as the n-th point
//! of its kind from an incarnation's ready line, `since` a boundary reached at a system call, or
//! among one operation's exchanges with the world (CONTRACT.md section 7).

use super::Source;
use crate::model::boundary::Boundary;
use crate::scenario::{Operation, ScenarioError, SyscallFault};
use toml::Spanned;

impl Source<'_> {
    /// The `[[syscall_fault]]` tables: counts from 1, one place to count from, no point twice.
    pub(super) fn syscall_faults(
        &self,
        tables: Vec<Spanned<SyscallFault>>,
        operations: &[Operation],
    ) -> Result<Vec<SyscallFault>, ScenarioError> {
        let mut syscall_faults: Vec<SyscallFault> = Vec::new();
        for spanned in tables {
            let span = spanned.span();
            let f = spanned.into_inner();
            if f.occurrence == 0 || f.incarnation == Some(0) || f.since.as_ref().is_some_and(|a| a.occurrence == 0) {
                return Err(self.at(Some(span), "`occurrence` and `incarnation` count from 1".into()));
            }
            if let Some(anchor) = &f.since {
                if f.incarnation.is_some() {
                    return Err(self.at(
                        Some(span),
                        "a point is counted from an incarnation's ready line or `since` a boundary, not both".into(),
                    ));
                }
                let Some(op) = operations.iter().find(|op| op.id == anchor.operation) else {
                    return Err(self.at(
                        Some(span),
                        format!("`since` names operation `{}`, which this scenario does not have", anchor.operation),
                    ));
                };
                if let Some(why) = anchor_mistake(anchor, op) {
                    return Err(self.at(Some(span), why));
                }
            }
            if let Some(why) = f.operation.as_deref().and_then(|op| exchange_mistake(&f, op, operations)) {
                return Err(self.at(Some(span), why));
            }
            if f.kind == crate::tracer::PointKind::Answer && f.when == crate::tracer::When::Before {
                return Err(self.at(
                    Some(span),
                    "an `answer` point is only `after` (a kill before a receive is a kill after what came before it)"
                        .into(),
                ));
            }
            let before_request = f.kind == crate::tracer::PointKind::Request && f.when == crate::tracer::When::Before;
            if f.action == crate::scenario::SyscallAction::Freeze && !before_request {
                return Err(self.at(
                    Some(span),
                    format!(
                        "`action = \"freeze\"` holds a runtime just before a request (`kind = \"request\"`, `when = \"before\"`), where it holds no lock a replacement would wait on and its next act is the request the world refuses; found `{}` `{}`",
                        f.kind.name(),
                        f.when.name()
                    ),
                ));
            }
            if syscall_faults.contains(&f) {
                return Err(self.at(Some(span), "the same [[syscall_fault]] twice".into()));
            }
            syscall_faults.push(f);
        }
        Ok(syscall_faults)
    }
}

/// Why `anchor` (a `[[syscall_fault]]`'s `since`, naming `op`) cannot be reached at a system
/// call: a boundary outside the tracer's table, or a delivery attempt that names no destination
/// of the operation.
fn anchor_mistake(anchor: &crate::scenario::Anchor, op: &crate::scenario::Operation) -> Option<String> {
    let delivery = anchor.boundary == Boundary::AfterDeliverySend;
    match &anchor.destination {
        None if delivery => Some(format!(
            "`since` a delivery attempt (`after_delivery_send`) needs the `destination` it was sent to: one of {:?}",
            op.destinations
        )),
        Some(_) if !delivery => Some(format!(
            "`destination` belongs to a `since` at `after_delivery_send` (a delivery attempt), not at `{}`",
            anchor.boundary
        )),
        Some(d) if !op.destinations.contains(d) => Some(format!(
            "`since` names destination `{d}`, which operation `{}` does not deliver to (its destinations: {:?})",
            op.id, op.destinations
        )),
        None if !anchor.boundary.at_syscall() => Some(format!(
            "`since` needs a boundary reached at a system call ({}, or a delivery attempt: `after_delivery_send` with its `destination`), found `{}`",
            Boundary::AT_SYSCALL.map(|b| format!("`{b}`")).join(", "),
            anchor.boundary
        )),
        _ => None,
    }
}

/// Why a `[[syscall_fault]]` counted among one operation's exchanges (`operation = …`) cannot be
/// reached as written, if it cannot.
fn exchange_mistake(f: &SyscallFault, op: &str, operations: &[Operation]) -> Option<String> {
    use crate::tracer::PointKind;
    if !operations.iter().any(|o| o.id == op) {
        return Some(format!("`operation` names `{op}`, which this scenario does not have"));
    }
    if f.since.is_some() {
        return Some(
            "a point is counted among one operation's exchanges (`operation`) or `since` a boundary, not both".into(),
        );
    }
    if !matches!(f.kind, PointKind::Request | PointKind::Answer) {
        return Some(format!(
            "`operation` counts exchanges with the world (`kind = \"request\"` or `\"answer\"`); a `{}` point names no operation",
            f.kind.name()
        ));
    }
    None
}
