//! The tables that spoil the fake world's services rather than the runtime: `[[consumer_fault]]`,
//! `[[lookup_fault]]` and `[[policy_fault]]`.

use super::{LookupFaultFile, PolicyFaultFile, ServiceAction, Source};
use crate::model::boundary::unknown_word;
use crate::scenario::{ConsumerFault, LookupFault, ModelFault, Operation, PolicyFault, ScenarioError};
use fake_tool::{Injected, ToolKind};
use toml::Spanned;

impl Source<'_> {
    /// The `[[consumer_fault]]` tables: each scoped to operations or a tenant the workload has, and
    /// to a destination one of them delivers to.
    pub(super) fn consumer_faults(
        &self,
        tables: Vec<Spanned<ConsumerFault>>,
        operations: &[Operation],
    ) -> Result<Vec<ConsumerFault>, ScenarioError> {
        let mut consumer_faults = Vec::new();
        for spanned in tables {
            let span = spanned.span();
            let c = spanned.into_inner();
            if let Some(id) = &c.operation
                && !operations.iter().any(|o| o.id == *id)
            {
                let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
                return Err(self.at(Some(span), unknown_word("operation", id, &ids)));
            }
            if let Some(tenant) = &c.tenant
                && !operations.iter().any(|o| o.tenant == *tenant)
            {
                let mut tenants: Vec<&str> = operations.iter().map(|o| o.tenant.as_str()).collect();
                tenants.sort();
                tenants.dedup();
                return Err(self.at(Some(span), unknown_word("tenant", tenant, &tenants)));
            }
            if !operations.iter().any(|o| o.destinations.contains(&c.destination) && c.covers(o)) {
                let scope = match (&c.operation, &c.tenant) {
                    (Some(o), Some(t)) => format!(" among the operations of `{o}` and tenant `{t}`"),
                    (Some(o), None) => format!(": `{o}` does not"),
                    (None, Some(t)) => format!(" among tenant `{t}`'s"),
                    (None, None) => String::new(),
                };
                return Err(self.at(Some(span), format!("no operation delivers to `{}`{scope}", c.destination)));
            }
            // Zero would arm a fault that never fires: a scenario that looks spoilt and is not.
            if c.times == Some(0) {
                return Err(self.at(
                    Some(span),
                    "`times` counts the receipts to fail: expected 1 or more, or no `times` for a consumer that never recovers, found 0".into(),
                ));
            }
            consumer_faults.push(c);
        }
        Ok(consumer_faults)
    }

    /// The `[[lookup_fault]]` tables: at most one per operation, whose tool has a lookup.
    pub(super) fn lookup_faults(
        &self,
        tables: Vec<Spanned<LookupFaultFile>>,
        operations: &[Operation],
    ) -> Result<Vec<LookupFault>, ScenarioError> {
        let mut lookup_faults: Vec<LookupFault> = Vec::new();
        for spanned in tables {
            let span = spanned.span();
            let f = spanned.into_inner();
            let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
            let Some(op) = operations.iter().find(|o| o.id == *f.operation.get_ref()) else {
                return Err(self.at(Some(f.operation.span()), unknown_word("operation", f.operation.get_ref(), &ids)));
            };
            if !op.tool.supports_lookup() {
                return Err(self.at(
                Some(f.operation.span()),
                format!(
                    "`{}` uses {} ({}), which has no lookup: expected an operation whose tool can be looked up ({} or {})",
                    op.id,
                    op.tool.tool_name(),
                    op.tool.as_str(),
                    ToolKind::IdempotentByKey.tool_name(),
                    ToolKind::NonIdempotentWithLookup.tool_name()
                ),
            ));
            }
            if f.times == 0 {
                return Err(self
                    .at(Some(span), "`times` counts the first lookups to spoil: expected 1 or more, found 0".into()));
            }
            if lookup_faults.iter().any(|l| l.operation == op.id) {
                return Err(self.at(
                    Some(span),
                    format!("`{}` already has a [[lookup_fault]]; its `times` counts all its lookups", op.id),
                ));
            }
            // 404 is the truthful "not found": a lookup fault that sent it would be a lying
            // provider, and the runtime would be right to attempt again.
            let response = service_response("lookup", f.action, f.status, f.delay_ms, |s| s != 404)
                .map_err(|why| self.at(Some(span), why))?;
            lookup_faults.push(LookupFault { operation: op.id.clone(), times: f.times, response });
        }
        Ok(lookup_faults)
    }

    /// The `[[model_fault]]` tables: at most one per operation, which is a task.
    pub(super) fn model_faults(
        &self,
        tables: Vec<Spanned<LookupFaultFile>>,
        operations: &[Operation],
    ) -> Result<Vec<ModelFault>, ScenarioError> {
        let mut model_faults: Vec<ModelFault> = Vec::new();
        for spanned in tables {
            let span = spanned.span();
            let f = spanned.into_inner();
            let tasks: Vec<&str> = operations.iter().filter(|o| o.task).map(|o| o.id.as_str()).collect();
            let Some(op) = operations.iter().find(|o| o.id == *f.operation.get_ref() && o.task) else {
                return Err(self.at(
                    Some(f.operation.span()),
                    unknown_word("task operation (`task = true`)", f.operation.get_ref(), &tasks),
                ));
            };
            if f.times == 0 {
                return Err(self
                    .at(Some(span), "`times` counts the first answers to spoil: expected 1 or more, found 0".into()));
            }
            if model_faults.iter().any(|m| m.operation == op.id) {
                return Err(self.at(
                    Some(span),
                    format!("`{}` already has a [[model_fault]]; its `times` counts all its answers", op.id),
                ));
            }
            let response = service_response("model", f.action, f.status, f.delay_ms, |_| true)
                .map_err(|why| self.at(Some(span), why))?;
            model_faults.push(ModelFault { operation: op.id.clone(), times: f.times, response });
        }
        Ok(model_faults)
    }

    /// The `[[policy_fault]]` tables: for any operation or a known one.
    pub(super) fn policy_faults(
        &self,
        tables: Vec<Spanned<PolicyFaultFile>>,
        operations: &[Operation],
    ) -> Result<Vec<PolicyFault>, ScenarioError> {
        let mut policy_faults = Vec::new();
        for spanned in tables {
            let span = spanned.span();
            let f = spanned.into_inner();
            let operation = match &f.operation {
                Some(o) => {
                    let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
                    if !ids.contains(&o.get_ref().as_str()) {
                        return Err(self.at(Some(o.span()), unknown_word("operation", o.get_ref(), &ids)));
                    }
                    Some(o.get_ref().clone())
                }
                None => None,
            };
            if f.times == Some(0) {
                return Err(self.at(
                Some(span),
                "`times` counts the checks to spoil: expected 1 or more, or no `times` for a service that never recovers, found 0".into(),
            ));
            }
            let response = service_response("policy", f.action, f.status, f.delay_ms, |_| true)
                .map_err(|why| self.at(Some(span), why))?;
            policy_faults.push(PolicyFault { times: f.times, operation, subject: f.subject, response });
        }
        Ok(policy_faults)
    }
}

/// What a `[[lookup_fault]]` or `[[policy_fault]]` sends, from its `action`, `status` and
/// `delay_ms`; `allowed` says which `fail` statuses the service may send.
fn service_response(
    service: &str,
    action: ServiceAction,
    status: Option<u16>,
    delay_ms: Option<u64>,
    allowed: impl Fn(u16) -> bool,
) -> Result<Injected, String> {
    match (action, status, delay_ms) {
        (ServiceAction::Fail, None, None) => Ok(Injected::Failed(503)),
        (ServiceAction::Fail, Some(s), None) if (400..=599).contains(&s) && allowed(s) => Ok(Injected::Failed(s)),
        (ServiceAction::Fail, Some(s), None) => Err(format!(
            "a failing {service} answers an error that is no answer: expected a `status` from 400 to 599{}, found {s}",
            if allowed(404) { "" } else { " other than 404 (the truthful \"not found\")" }
        )),
        (ServiceAction::Delay, None, Some(ms)) => Ok(Injected::Late(ms)),
        (ServiceAction::Delay, None, None) => {
            Err(format!("`action = \"delay\"` needs `delay_ms`, how late the {service} answers"))
        }
        (ServiceAction::Drop, None, None) => Ok(Injected::Dropped),
        (ServiceAction::Garbage, None, None) => Ok(Injected::Garbage),
        (_, Some(_), _) => Err("`status` only applies with `action = \"fail\"`".into()),
        (_, None, Some(_)) => Err("`delay_ms` only applies with `action = \"delay\"`".into()),
    }
}
