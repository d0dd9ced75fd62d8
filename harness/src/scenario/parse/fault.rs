//! The `[[fault]]` tables: each one converted to a [`Fault`], its checks in the order they have
//! always run, then every fault checked reachable once all of them are known.

use super::{FaultFile, Source};
use crate::model::boundary::{Site, unknown_word};
use crate::scenario::possible::{freezable, never_reached};
use crate::scenario::{Action, Fault, Operation, Revoke, ScenarioError, line_col};
use std::ops::Range;
use toml::Spanned;

impl Source<'_> {
    /// Every `[[fault]]` in file order, with the span of each (for the errors found later).
    pub(super) fn faults(
        &self,
        tables: Vec<Spanned<FaultFile>>,
        operations: &[Operation],
    ) -> Result<(Vec<Fault>, Vec<Range<usize>>), ScenarioError> {
        let mut faults = Vec::new();
        let mut fault_spans = Vec::new();
        super::Mistakes::each(tables, |spanned| {
            // A fault with a mistake is left out, its span with it: the two lists stay in step.
            let span = spanned.span();
            let fault = self.fault(spanned.into_inner(), &span, operations)?;
            self.not_where_another_is(&fault, span.clone(), &faults, &fault_spans)?;
            faults.push(fault);
            fault_spans.push(span);
            Ok(())
        })?;
        Ok((faults, fault_spans))
    }

    /// Every fault can be reached, now that all of them (and so all revocations) are known.
    pub(super) fn all_reachable(
        &self,
        faults: &[Fault],
        fault_spans: Vec<Range<usize>>,
        operations: &[Operation],
    ) -> Result<(), ScenarioError> {
        super::Mistakes::each(faults.iter().zip(fault_spans), |(fault, span)| {
            match never_reached(fault, operations, faults) {
                Some(why) => Err(self.at(Some(span), why)),
                None => Ok(()),
            }
        })
    }

    /// One `[[fault]]` table, at `span`, checked on its own.
    fn fault(&self, f: FaultFile, span: &Range<usize>, operations: &[Operation]) -> Result<Fault, ScenarioError> {
        let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
        let Some(op) = operations.iter().find(|o| o.id == *f.operation.get_ref()) else {
            return Err(self.at(Some(f.operation.span()), unknown_word("operation", f.operation.get_ref(), &ids)));
        };
        if f.occurrence == 0 {
            return Err(
                self.at(Some(span.clone()), "occurrence counts from 1 (the first time the boundary is reached)".into())
            );
        }
        let destination = self.destination(&f, op, span)?;
        self.action_applies(&f, op, operations, span)?;
        let effect = self.effect(&f, span)?;
        let status = self.status(&f, span)?;
        self.counts_apply(&f, span)?;
        let delay_ms = self.delay_ms(&f, span)?;
        if op.destinations.is_empty() && f.at.is_delivery() {
            return Err(
                self.at(Some(span.clone()), format!("`{}` has no destinations, so it never reaches `{}`", op.id, f.at))
            );
        }
        let revoke = self.revoke(&f, op)?;
        Ok(Fault {
            at: f.at,
            operation: op.id.clone(),
            occurrence: f.occurrence,
            attempt: f.attempt,
            destination,
            effect,
            action: f.action,
            delay_ms,
            status,
            revoke,
        })
    }

    /// `destination`: one of the operation's, named at a delivery boundary and only there.
    fn destination(&self, f: &FaultFile, op: &Operation, span: &Range<usize>) -> Result<Option<String>, ScenarioError> {
        match (&f.destination, f.at.is_delivery()) {
            (Some(d), true) => {
                if !op.destinations.contains(d.get_ref()) {
                    let valid: Vec<&str> = op.destinations.iter().map(String::as_str).collect();
                    return Err(self.at(Some(d.span()), unknown_word("destination", d.get_ref(), &valid)));
                }
                Ok(Some(d.get_ref().clone()))
            }
            (None, true) => {
                Err(self
                    .at(Some(span.clone()), format!("a fault at `{}` must name a `destination` of `{}`", f.at, op.id)))
            }
            (Some(d), false) => {
                Err(self
                    .at(Some(d.span()), format!("`destination` only applies to delivery boundaries, not `{}`", f.at)))
            }
            (None, false) => Ok(None),
        }
    }

    /// The `action` fits the boundary: a freeze where one means something and with the operation
    /// alone in its wave, the provider's answers at the provider's boundary; then `effect` there only.
    fn action_applies(
        &self,
        f: &FaultFile,
        op: &Operation,
        operations: &[Operation],
        span: &Range<usize>,
    ) -> Result<(), ScenarioError> {
        if f.action == Action::Freeze {
            freezable(f.at, !f.revoke.is_empty(), &op.id).map_err(|why| self.at(Some(span.clone()), why))?;
            // Frozen with other operations in flight, the runtime may be stopped inside one of
            // their transactions, holding its store's lock: the replacement could never start.
            let beside = op.wave.is_some_and(|w| operations.iter().any(|o| o.id != op.id && o.wave == Some(w)));
            if beside {
                return Err(self.at(
                    Some(span.clone()),
                    format!(
                        "`action = \"freeze\"` needs `{}` alone in its wave: frozen with other operations in flight, the runtime may be stopped holding its store's lock, and no replacement could start",
                        op.id
                    ),
                ));
            }
        }
        if f.at.site() != Site::Provider && !matches!(f.action, Action::Kill | Action::Freeze) {
            return Err(self.at(
                Some(span.clone()),
                format!(
                    "`action = \"fail\" | \"reject\" | \"drop\" | \"cut\" | \"garbage\" | \"no_ref\" | \"delay\"` only applies at `after_dispatch` (the provider's boundary), not `{}`",
                    f.at
                ),
            ));
        }
        Ok(())
    }

    /// Whether the side effect happens before the fault: said at the provider's boundary only, and
    /// never by a refusal.
    fn effect(&self, f: &FaultFile, span: &Range<usize>) -> Result<bool, ScenarioError> {
        // Elsewhere the runtime, not the provider, decides what has happened: `effect` would
        // be a promise the harness cannot keep, whichever value it has.
        if let (Some(effect), true) = (f.effect, f.at.site() != Site::Provider) {
            return Err(self.at(
                Some(span.clone()),
                format!(
                    "`effect` only applies at `after_dispatch` (whether the provider applies the call before the fault), not `{}`: expected no `effect`, found `effect = {effect}`",
                    f.at
                ),
            ));
        }
        match (f.action, f.effect) {
            (Action::Reject, Some(true)) => Err(self.at(
                Some(span.clone()),
                "`action = \"reject\"` is a refusal, which never applies the effect: expected no `effect` (or `effect = false`), found `effect = true`".into(),
            )),
            (Action::Reject, _) => Ok(false),
            (_, effect) => Ok(effect.unwrap_or(true)),
        }
    }

    /// The status the provider answers: a 5xx for `fail`, a 4xx for `reject`, none for the others.
    fn status(&self, f: &FaultFile, span: &Range<usize>) -> Result<Option<u16>, ScenarioError> {
        match (f.action, f.status) {
            (Action::Fail, None) => Ok(Some(503)),
            (Action::Reject, None) => Ok(Some(422)),
            (Action::Fail, Some(s @ 500..=599)) | (Action::Reject, Some(s @ 400..=499)) => Ok(Some(s)),
            (Action::Fail, Some(s)) => Err(self.at(
                Some(span.clone()),
                format!(
                    "`action = \"fail\"` answers a server error: expected a `status` from 500 to 599, found {s} (a 4xx is `action = \"reject\"`)"
                ),
            )),
            (Action::Reject, Some(s)) => Err(self.at(
                Some(span.clone()),
                format!(
                    "`action = \"reject\"` answers a refusal: expected a `status` from 400 to 499, found {s} (a 5xx is `action = \"fail\"`)"
                ),
            )),
            (other, Some(_)) => Err(self.at(
                Some(span.clone()),
                format!("`status` only applies with `action = \"fail\"` or `\"reject\"`, not `\"{}\"`", other.name()),
            )),
            (_, None) => Ok(None),
        }
    }

    /// `attempt` and `occurrence` mean something at the boundary: no attempt the provider or the
    /// client cannot see, one occurrence of a client boundary, attempts from 1.
    fn counts_apply(&self, f: &FaultFile, span: &Range<usize>) -> Result<(), ScenarioError> {
        if f.at.site() == Site::Provider && f.attempt.is_some() {
            return Err(self.at(
                Some(span.clone()),
                format!(
                    "`attempt` does not apply at `{}`: the provider cannot see the runtime's attempt numbers; use `occurrence` (the n-th call the provider sees)",
                    f.at
                ),
            ));
        }
        if f.at.site() == Site::Client && f.attempt.is_some() {
            return Err(self.at(
                Some(span.clone()),
                format!(
                    "`attempt` does not apply at `{}`: it is the answer to the submission, before any attempt",
                    f.at
                ),
            ));
        }
        if f.at.site() == Site::Client && f.occurrence != 1 {
            return Err(self.at(
                Some(span.clone()),
                format!(
                    "`{}` happens once per operation (the harness's first submission of it), so `occurrence` can only be 1, found {}",
                    f.at, f.occurrence
                ),
            ));
        }
        if f.attempt == Some(0) {
            return Err(self.at(Some(span.clone()), "attempt counts from 1".into()));
        }
        Ok(())
    }

    /// How late the provider answers: given with `action = "delay"` and only then.
    fn delay_ms(&self, f: &FaultFile, span: &Range<usize>) -> Result<u64, ScenarioError> {
        match (f.action, f.delay_ms) {
            (Action::Delay, Some(ms)) => Ok(ms),
            (Action::Delay, None) => Err(self
                .at(Some(span.clone()), "`action = \"delay\"` needs `delay_ms`, how late the provider answers".into())),
            (_, Some(_)) => {
                Err(self.at(Some(span.clone()), "`delay_ms` only applies with `action = \"delay\"`".into()))
            }
            (_, None) => Ok(0),
        }
    }

    /// The permissions the fault withdraws: each a known kind, each once.
    fn revoke(&self, f: &FaultFile, op: &Operation) -> Result<Vec<Revoke>, ScenarioError> {
        let mut revoke = Vec::new();
        for r in &f.revoke {
            let withdrawn = match r.get_ref().as_str() {
                "tool" => Revoke::Tool,
                "operation" => Revoke::Operation,
                other => match other.strip_prefix("destination:") {
                    Some(d) if op.destinations.iter().any(|x| x == d) => Revoke::Destination(d.to_owned()),
                    _ => {
                        return Err(self.at(
                            Some(r.span()),
                            format!(
                                "expected `tool`, `operation` or `destination:NAME` with NAME one of {:?}, found `{other}`",
                                op.destinations
                            ),
                        ));
                    }
                },
            };
            // Put in force once: a second identical revocation would be a second ledger line
            // for one withdrawal.
            if revoke.contains(&withdrawn) {
                return Err(self.at(Some(r.span()), format!("`{}` is revoked twice by this fault", r.get_ref())));
            }
            revoke.push(withdrawn);
        }
        Ok(revoke)
    }

    /// `fault`, at `span`, is not at the place of one of the `earlier` faults (whose spans come
    /// first in `spans`).
    fn not_where_another_is(
        &self,
        fault: &Fault,
        span: Range<usize>,
        earlier: &[Fault],
        spans: &[Range<usize>],
    ) -> Result<(), ScenarioError> {
        // Two faults at one boundary occurrence: only the first would fire, and the second
        // would be reported as never reached, a failure of the runtime.
        let same_place = |g: &Fault| {
            g.at == fault.at
                && g.operation == fault.operation
                && g.occurrence == fault.occurrence
                && g.attempt == fault.attempt
                && g.destination == fault.destination
        };
        if let Some(first) = earlier.iter().position(same_place) {
            let (line, _) = line_col(self.text, spans[first].start);
            return Err(self.at(
                Some(span),
                format!(
                    "this [[fault]] is at the same place as the one on line {line} (`{}` of `{}`, occurrence {}{}): only one fault can fire there, so expected another `occurrence`{}, or one fault",
                    fault.at,
                    fault.operation,
                    fault.occurrence,
                    fault.attempt.map(|a| format!(", attempt {a}")).unwrap_or_default(),
                    if fault.at.site() == Site::Probe { " or `attempt`" } else { "" }
                ),
            ));
        }
        Ok(())
    }
}
