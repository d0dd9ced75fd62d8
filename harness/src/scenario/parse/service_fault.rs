//! The `[[service_fault]]` tables: a declared service taken down and started again, frozen, or cut
//! off from the worker for a while, at a boundary of an operation, while the worker lives on.
//! Which services exist is the services file's (`--services`), not the scenario's: a name is
//! checked for its form here (or is `*`, every declared one) and against the declared services
//! when a run starts.

use super::Source;
use crate::model::boundary::{Boundary, unknown_word};
use crate::scenario::{EVERY_SERVICE, Fault, Operation, ScenarioError, ServiceFault, line_col};
use std::ops::Range;
use toml::Spanned;

impl Source<'_> {
    /// Every `[[service_fault]]`, in file order, each checked on its own and against the faults.
    pub(super) fn service_faults(
        &self,
        tables: Vec<Spanned<ServiceFault>>,
        operations: &[Operation],
        faults: &[Fault],
    ) -> Result<Vec<ServiceFault>, ScenarioError> {
        let mut service_faults: Vec<ServiceFault> = Vec::new();
        let mut spans: Vec<Range<usize>> = Vec::new();
        super::Mistakes::each(tables, |spanned| {
            let span = spanned.span();
            let fault = spanned.into_inner();
            self.service_fault(&fault, &span, operations, faults)?;
            if let Some(first) = service_faults.iter().position(|g| same_place(g, &fault)) {
                let (line, _) = line_col(self.text, spans[first].start);
                return Err(self.at(
                    Some(span),
                    format!(
                        "this [[service_fault]] is at the same place as the one on line {line} (`{}` of `{}`, occurrence {}): only one can fire there, so expected another `occurrence`, or one service fault (`service = \"*\"` acts on every service at once)",
                        fault.at, fault.operation, fault.occurrence
                    ),
                ));
            }
            service_faults.push(fault);
            spans.push(span);
            Ok(())
        })?;
        Ok(service_faults)
    }

    /// One table: a service name of the right form (or `*`), a known operation, a boundary where
    /// the harness can act at a known moment (a delivery's with its destination), counts from 1,
    /// and `seconds` exactly where the action lasts a while.
    fn service_fault(
        &self,
        f: &ServiceFault,
        span: &Range<usize>,
        operations: &[Operation],
        faults: &[Fault],
    ) -> Result<(), ScenarioError> {
        let at = |message: String| self.at(Some(span.clone()), message);
        if f.service != EVERY_SERVICE
            && let Err(why) = crate::model::service_name(&f.service)
        {
            return Err(at(format!("{why}, or `*` (every declared service)")));
        }
        let Some(operation) = operations.iter().find(|o| o.id == f.operation) else {
            let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
            return Err(at(unknown_word("operation", &f.operation, &ids)));
        };
        if f.occurrence == 0 {
            return Err(at("occurrence counts from 1 (the first time the boundary is reached)".into()));
        }
        if !SERVICE_FAULT_BOUNDARIES.contains(&f.at) {
            let names: Vec<String> = SERVICE_FAULT_BOUNDARIES.iter().map(|b| format!("`{b}`")).collect();
            return Err(at(format!(
                "a [[service_fault]] fires where the harness holds the worker still (a probe's boundary) or as the provider answers (`after_dispatch`): expected `at` one of {}, found `{}`",
                names.join(", "),
                f.at
            )));
        }
        destination(f, operation).map_err(at)?;
        seconds(f).map_err(at)?;
        until(f, operations).map_err(at)?;
        // Both would be armed on the provider's same call, and only one can be.
        let shared = faults.iter().find(|g| {
            f.at == Boundary::AfterDispatch
                && matches!(g.at, Boundary::AfterDispatch | Boundary::AfterProviderSuccess)
                && g.operation == f.operation
                && g.occurrence == f.occurrence
        });
        if let Some(g) = shared {
            return Err(at(format!(
                "a [[service_fault]] at `after_dispatch` of `{}`, occurrence {}, takes the provider's answer to that call, which the [[fault]] at `{}` takes too: expected another `occurrence`, or a probe's boundary",
                f.operation, f.occurrence, g.at
            )));
        }
        Ok(())
    }
}

/// A delivery boundary names one of the operation's destinations; no other boundary names one.
fn destination(f: &ServiceFault, operation: &Operation) -> Result<(), String> {
    match (&f.destination, f.at == Boundary::AfterDeliverySend) {
        (None, true) => Err(format!(
            "a [[service_fault]] at `after_delivery_send` fires at one delivery: expected `destination`, one of {:?}",
            operation.destinations
        )),
        (Some(d), true) if !operation.destinations.contains(d) => Err(format!(
            "expected `destination` one of `{}`'s destinations {:?}, found `{d}`",
            operation.id, operation.destinations
        )),
        (Some(d), false) => Err(format!(
            "`destination` names a delivery, and `{}` is not a delivery's boundary: expected `at = \"after_delivery_send\"`, or no `destination` (found `{d}`)",
            f.at
        )),
        _ => Ok(()),
    }
}

/// `until`: a window's only, at a boundary the probe announces for one operation (a delivery's
/// needs a destination an anchor does not take), of a known operation, counted from 1.
fn until(f: &ServiceFault, operations: &[Operation]) -> Result<(), String> {
    let Some(anchor) = &f.until else { return Ok(()) };
    if !f.action.is_window() {
        return Err(format!(
            "a `{}` ends when the service is ready again: expected no `until`, or `action = \"freeze\"` or `\"unreachable\"`",
            f.action.name()
        ));
    }
    if !UNTIL_BOUNDARIES.contains(&anchor.boundary) {
        let names: Vec<String> = UNTIL_BOUNDARIES.iter().map(|b| format!("`{b}`")).collect();
        return Err(format!(
            "a window ends `until` an operation reaches a boundary the probe announces: expected `until.boundary` one of {}, found `{}`",
            names.join(", "),
            anchor.boundary
        ));
    }
    if !operations.iter().any(|o| o.id == anchor.operation) {
        let ids: Vec<&str> = operations.iter().map(|o| o.id.as_str()).collect();
        return Err(format!("in `until`: {}", unknown_word("operation", &anchor.operation, &ids)));
    }
    if anchor.occurrence == 0 {
        return Err("`until.occurrence` counts from 1 (the first time the boundary is reached)".into());
    }
    Ok(())
}

/// Where a window's `until` can be: the probe's boundaries of an operation's execution.
const UNTIL_BOUNDARIES: [Boundary; 4] = [
    Boundary::BeforeDispatch,
    Boundary::AfterProviderSuccess,
    Boundary::AfterResultWrite,
    Boundary::AfterPolicyRevocation,
];

/// The longest window a scenario may ask for: longer is a stuck run, not a fault.
const MAX_SECONDS: f64 = 600.0;

/// `seconds` for a `freeze` or an `unreachable`, between 0 and [`MAX_SECONDS`]; none for a kill
/// or a restart, which end when the service is ready again.
fn seconds(f: &ServiceFault) -> Result<(), String> {
    let action = f.action.name();
    match (f.seconds, f.action.is_window()) {
        (None, true) => Err(format!(
            "a `{action}` lasts a stated time: expected `seconds` (more than 0, at most {MAX_SECONDS}), found none"
        )),
        (Some(s), true) if !(s > 0.0 && s <= MAX_SECONDS) => {
            Err(format!("expected `seconds` more than 0 and at most {MAX_SECONDS}, found {s}"))
        }
        (Some(s), false) => Err(format!(
            "a `{action}` ends when the service is ready again: expected no `seconds` (found {s}), or `action = \"freeze\"` or `\"unreachable\"`"
        )),
        _ => Ok(()),
    }
}

/// Where a service fault can fire: at each boundary the probe announces (the worker waits for
/// the harness's answer while its server goes down and comes back), and as the provider answers
/// a call. Not at `after_submit` (the harness's own request, which a service fault would race).
const SERVICE_FAULT_BOUNDARIES: [Boundary; 6] = [
    Boundary::BeforeDispatch,
    Boundary::AfterDispatch,
    Boundary::AfterProviderSuccess,
    Boundary::AfterResultWrite,
    Boundary::AfterPolicyRevocation,
    Boundary::AfterDeliverySend,
];

fn same_place(a: &ServiceFault, b: &ServiceFault) -> bool {
    a.at == b.at && a.operation == b.operation && a.occurrence == b.occurrence && a.destination == b.destination
}

#[cfg(test)]
mod tests {
    use crate::model::boundary::Boundary;
    use crate::scenario::{Scenario, ServiceFault, ServiceFaultAction};
    use std::path::Path;

    const WORKLOAD: &str = "description = \"x\"\n[[operation]]\nid = \"a\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n";

    fn parse(tables: &str) -> Result<Scenario, String> {
        Scenario::parse(Path::new("s.toml"), &format!("{WORKLOAD}{tables}")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_service_fault_is_read_with_its_defaults_and_written_back_the_same() {
        let s = parse("[[service_fault]]\nservice = \"kv\"\nat = \"before_dispatch\"\noperation = \"a\"\n").unwrap();
        let expected = ServiceFault {
            service: "kv".into(),
            at: Boundary::BeforeDispatch,
            operation: "a".into(),
            occurrence: 1,
            destination: None,
            action: ServiceFaultAction::Kill,
            seconds: None,
            until: None,
        };
        assert_eq!(s.service_faults, [expected]);
        assert!(!s.needs_services(), "a named service is the services file's to declare");
        let again = Scenario::parse(Path::new("s.toml"), &s.to_toml()).unwrap();
        assert_eq!(again.service_faults, s.service_faults);
    }

    #[test]
    fn windows_every_service_and_deliveries_are_written_back_the_same() {
        let text = format!(
            "needs_services = true\n{WORKLOAD}{}",
            concat!(
                "[[service_fault]]\nservice = \"*\"\nat = \"after_provider_success\"\noperation = \"a\"\naction = \"freeze\"\nseconds = 1.5\nuntil = { boundary = \"after_result_write\", operation = \"a\" }\n",
                "[[service_fault]]\nservice = \"kv\"\nat = \"after_delivery_send\"\noperation = \"a\"\ndestination = \"ledger\"\naction = \"unreachable\"\nseconds = 2\n",
            )
        );
        let s = Scenario::parse(Path::new("s.toml"), &text).unwrap();
        assert!(s.needs_services);
        assert_eq!(s.service_faults[0].window(), Some(std::time::Duration::from_millis(1500)));
        assert_eq!(s.service_faults[0].targets(&["kv", "pg"]), ["kv", "pg"], "`*` is every service, in order");
        assert_eq!(s.service_faults[1].targets(&["kv", "pg"]), ["kv"]);
        assert_eq!(s.service_faults[1].describe(), "unreachable kv for 2s at after_delivery_send #1 of a -> ledger");
        assert_eq!(
            s.service_faults[0].describe(),
            "freeze * for 1.5s or until after_result_write #1 of a at after_provider_success #1 of a"
        );
        let again = Scenario::parse(Path::new("s.toml"), &s.to_toml()).unwrap();
        assert_eq!((again.service_faults, again.needs_services), (s.service_faults, true));
    }

    #[test]
    fn mistakes_are_named_with_their_line_and_column() {
        let table = |rest: &str| format!("[[service_fault]]\nservice = \"kv\"\noperation = \"a\"\n{rest}");
        let cases = [
            (
                table("at = \"after_submit\"\n"),
                "s.toml:7:1: a [[service_fault]] fires where the harness holds the worker still",
            ),
            (table("at = \"before_dispatch\"\noccurrence = 0\n"), "s.toml:7:1: occurrence counts from 1"),
            (table("at = \"before_dispatch\"\naction = \"pause\"\n"), "s.toml:11:10: unknown variant `pause`"),
            (
                table("at = \"before_dispatch\"\naction = \"freeze\"\n"),
                "s.toml:7:1: a `freeze` lasts a stated time: expected `seconds`",
            ),
            (
                table("at = \"before_dispatch\"\naction = \"unreachable\"\nseconds = 0\n"),
                "s.toml:7:1: expected `seconds` more than 0 and at most 600, found 0",
            ),
            (
                table("at = \"before_dispatch\"\nseconds = 2\n"),
                "s.toml:7:1: a `kill` ends when the service is ready again: expected no `seconds` (found 2)",
            ),
            (
                table(
                    "at = \"before_dispatch\"\naction = \"freeze\"\nseconds = 1\nuntil = { boundary = \"after_dispatch\", operation = \"a\" }\n",
                ),
                "s.toml:7:1: a window ends `until` an operation reaches a boundary the probe announces: expected `until.boundary` one of",
            ),
            (
                table(
                    "at = \"before_dispatch\"\naction = \"freeze\"\nseconds = 1\nuntil = { boundary = \"after_result_write\", operation = \"b\" }\n",
                ),
                "s.toml:7:1: in `until`: unknown operation `b`",
            ),
            (
                table("at = \"before_dispatch\"\nuntil = { boundary = \"after_result_write\", operation = \"a\" }\n"),
                "s.toml:7:1: a `kill` ends when the service is ready again: expected no `until`",
            ),
            (
                table("at = \"after_delivery_send\"\n"),
                "s.toml:7:1: a [[service_fault]] at `after_delivery_send` fires at one delivery: expected `destination`",
            ),
            (
                table("at = \"after_delivery_send\"\ndestination = \"mailer\"\n"),
                "s.toml:7:1: expected `destination` one of `a`'s destinations [\"ledger\"], found `mailer`",
            ),
            (
                table("at = \"before_dispatch\"\ndestination = \"ledger\"\n"),
                "s.toml:7:1: `destination` names a delivery, and `before_dispatch` is not a delivery's boundary",
            ),
            (
                "[[service_fault]]\nservice = \"**\"\noperation = \"a\"\nat = \"before_dispatch\"\n".into(),
                "s.toml:7:1: expected a service name of lower-case letters, digits and `_`, starting with a letter, at most 32 characters; found `**`, or `*` (every declared service)",
            ),
            (
                "[[service_fault]]\nservice = \"KV\"\noperation = \"a\"\nat = \"before_dispatch\"\n".into(),
                "s.toml:7:1: expected a service name",
            ),
            (
                "[[service_fault]]\nservice = \"kv\"\noperation = \"b\"\nat = \"before_dispatch\"\n".into(),
                "s.toml:7:1: unknown operation `b`",
            ),
            (
                format!("{}{}", table("at = \"before_dispatch\"\n"), table("at = \"before_dispatch\"\n")),
                "s.toml:11:1: this [[service_fault]] is at the same place as the one on line 7",
            ),
            (
                format!(
                    "[[fault]]\nat = \"after_dispatch\"\noperation = \"a\"\n{}",
                    table("at = \"after_dispatch\"\n")
                ),
                "s.toml:10:1: a [[service_fault]] at `after_dispatch` of `a`, occurrence 1, takes the provider's answer",
            ),
        ];
        for (tables, expected) in cases {
            let error = parse(&tables).expect_err(&tables);
            assert!(error.contains(expected), "for {tables:?}: expected {expected:?} in {error:?}");
        }
    }
}
