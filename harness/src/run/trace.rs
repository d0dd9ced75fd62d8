//! The trace: the harness's timeline and the fake world's ledger merged on their shared clock,
//! one readable line per event. Failure reports quote it; snapshots pin it.

use crate::run::driver::{Happening, Mark, Release, Run};
use fake_tool::{Effect, Entry, Event, Injected, ModelAnswer, PolicyAnswer, Response, Subject};

/// One line of the trace, with its sequence number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub seq: u64,
    pub text: String,
    /// For a step of a delivery: its destination. The steps are a destination's policy check, the
    /// consumer's receipt and an `after_delivery_send` the runtime was let past; a kill there is
    /// not a step (what follows it is the next incarnation's).
    pub destination: Option<String>,
}

/// Every event of the run, in clock order.
pub fn lines(run: &Run) -> Vec<Line> {
    let marks = with_services_alive(&run.timeline);
    let mut lines: Vec<Line> = run.ledger.iter().map(entry_line).chain(marks).collect();
    lines.sort_by_key(|l| l.seq);
    lines
}

/// The harness's marks as lines, in the timeline's order, with [`mark_texts`]'s words.
fn with_services_alive(timeline: &[Mark]) -> Vec<Line> {
    timeline.iter().zip(mark_texts(timeline)).map(|(mark, text)| Line { text, ..mark_line(mark) }).collect()
}

/// Each mark in words ([`describe_mark`]), a kill of the worker saying which services lived on
/// through it: with services declared, a kill takes the worker alone, and the server decides what
/// runs again. The text trace and the HTML timeline both say it.
/// Under `--crash machine` a kill is a power loss of the machine: the services it took are said
/// instead (the `ServicePowerLoss` marks that follow it).
pub fn mark_texts(timeline: &[Mark]) -> Vec<String> {
    let mut alive: Vec<&str> = Vec::new();
    let mut texts = Vec::new();
    for (i, mark) in timeline.iter().enumerate() {
        let mut text = describe_mark(mark);
        match &mark.happening {
            Happening::ServiceStarted { service, .. } | Happening::ServiceRestarted { service, .. } => {
                alive.push(service)
            }
            Happening::ServiceExited { service, .. }
            | Happening::ServiceStopped { service }
            | Happening::ServiceKilled { service, .. }
            | Happening::ServicePowerLoss { service, .. } => {
                alive.retain(|s| s != service);
            }
            Happening::Killed { .. } if !alive.is_empty() => {
                let taken = taken_by_power_loss(&timeline[i + 1..]);
                let lived: Vec<&str> = alive.iter().copied().filter(|s| !taken.contains(s)).collect();
                if !taken.is_empty() {
                    text.push_str(&format!(" (a power loss: service {} goes down with it)", taken.join(", ")));
                }
                if !lived.is_empty() {
                    text.push_str(&format!(" (the worker only: service {} lives on)", lived.join(", ")));
                }
            }
            _ => {}
        }
        texts.push(text);
    }
    texts
}

/// The services a power loss took with the kill just before `after`: its `ServicePowerLoss`
/// marks, up to the next start of the worker.
fn taken_by_power_loss(after: &[Mark]) -> Vec<&str> {
    after
        .iter()
        .take_while(|m| !matches!(m.happening, Happening::Started { .. }))
        .filter_map(|m| match &m.happening {
            Happening::ServicePowerLoss { service, .. } => Some(service.as_str()),
            _ => None,
        })
        .collect()
}

fn entry_line(entry: &Entry) -> Line {
    let destination = match &entry.event {
        Event::ConsumerReceipt { destination, .. } => Some(destination.clone()),
        Event::PolicyCheck { subject: Subject::Destination(destination), .. } => Some(destination.clone()),
        _ => None,
    };
    Line { seq: entry.seq, text: describe_entry(entry), destination }
}

fn mark_line(mark: &Mark) -> Line {
    let destination = match &mark.happening {
        Happening::Boundary { message, killed: false } => message.destination.clone(),
        _ => None,
    };
    Line { seq: mark.seq, text: describe_mark(mark), destination }
}

/// The trace as snapshots pin it: no sequence numbers (they shift with unrelated events), and no
/// `submit` lines. The harness submits the next operation as soon as the last one reads as
/// settled, and a runtime may still announce a boundary after that (`after_policy_revocation`
/// follows the refusal's commit), so where a submit falls among those lines is a race; everything
/// else in the trace is ordered by the runtime's own single loop.
///
/// Resubmissions after a restart (`harness   submit … again`) are left out for the same reason:
/// the new incarnation works while they are answered. And after an `after_submit` kill, the killed
/// incarnation may or may not have asked the policy service before the SIGKILL landed (its worker
/// starts as soon as the intent is recorded), and that request may reach the fake world after the
/// restart: a policy line repeated before the new incarnation's first announcement is kept once.
///
/// Deliveries to different destinations are not ordered by anything: the runtime sends each
/// when its retry falls due, and which of two comes first depends on how late its loop wakes. So
/// in each stretch of consecutive delivery steps, the steps are listed one destination after the
/// other, by name, each destination's in their own order. Any other line (a kill, a restart, the
/// next operation) ends the stretch: no step moves across it.
pub fn normalised(run: &Run) -> Vec<String> {
    normalise(lines(run))
}

fn normalise(lines: Vec<Line>) -> Vec<String> {
    let mut out = without_races(lines);
    for stretch in out.chunk_by_mut(|a, b| a.destination.is_some() && b.destination.is_some()) {
        // Stable: one destination's steps keep their order.
        stretch.sort_by(|a, b| a.destination.cmp(&b.destination));
    }
    out.into_iter().map(|line| line.text).collect()
}

/// The lines without submissions, and without the killed incarnation's repeated policy check.
fn without_races(lines: Vec<Line>) -> Vec<Line> {
    let submitted = |l: &Line| l.text.starts_with("harness   submit ");
    let mut out: Vec<Line> = Vec::new();
    let mut after_submit_kill = false;
    for line in lines.into_iter().filter(|l| !submitted(l)) {
        if line.text.starts_with("client ") {
            after_submit_kill = true;
        } else if line.text.starts_with("runtime ") {
            after_submit_kill = false;
        } else if after_submit_kill
            && line.text.starts_with("policy ")
            && let Some(earlier) = out.iter().rposition(|l| l.text == line.text)
        {
            out.remove(earlier);
        }
        out.push(line);
    }
    out
}

pub fn describe_mark(mark: &Mark) -> String {
    match &mark.happening {
        Happening::Started { incarnation } => format!("harness   start incarnation {incarnation}"),
        Happening::Submitted { operation } => format!("harness   submit {operation}"),
        Happening::Answered { operation, status } => format!("harness   submit {operation}: answered {status}"),
        Happening::Resubmitted { operation, incarnation, submission, answer, read_after } => {
            let id = operation.as_deref().or(submission.malformed_id()).unwrap_or("(no id)");
            let read = read_after.as_ref().map(|r| format!("; then read: {}", r.describe())).unwrap_or_default();
            format!(
                "harness   submit {id} again to incarnation {incarnation}, {}: answered {}{read}",
                submission.describe(),
                answer.describe()
            )
        }
        Happening::Forgotten { operation, incarnation, answer } => {
            format!("runtime   incarnation {incarnation} does not know {operation}: {answer}")
        }
        Happening::Boundary { message, killed } => {
            let destination = message.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
            format!(
                "runtime   {} {} attempt {}{destination}: {}",
                message.boundary,
                message.operation_id,
                message.attempt,
                if *killed { "KILL" } else { "resume" }
            )
        }
        Happening::KillPoint { what, .. } => {
            // `what` starts with who saw it ("provider holds …"): align it like the ledger lines.
            let (who, rest) = what.split_once(' ').unwrap_or(("", what));
            format!("{who:<9} {rest}: KILL")
        }
        Happening::Killed { incarnation } => format!("harness   SIGKILL incarnation {incarnation}"),
        Happening::PowerLoss { incarnation, lost } if lost.is_empty() => format!(
            "harness   power loss under incarnation {incarnation}: its data dir keeps what it synced, which was all it wrote"
        ),
        Happening::PowerLoss { incarnation, lost } => format!(
            "harness   power loss under incarnation {incarnation}: its data dir keeps only what it synced — {}",
            lost.join("; ")
        ),
        Happening::Restored { incarnation, lag, back, age_ms, path, lost } => {
            let lost = match lost.is_empty() {
                true => "it lacks nothing the dir held at the kill".to_owned(),
                false => format!("it lacks {}", lost.join("; ")),
            };
            format!(
                "harness   restore: the host of incarnation {incarnation} is lost; its backup {back} durable change(s) and {age_ms} ms before the kill (lag {lag}) restored into {path}, with {}: {lost}",
                crate::run::driver::RESTORED_VARIABLE
            )
        }
        Happening::ResubmittedAfterRestore { operation, incarnation, answer, status } => format!(
            "harness   {operation} unknown to restored incarnation {incarnation} ({answer}): a retrying client submits it again, answered {status}"
        ),
        Happening::SyscallKill { incarnation, point } => {
            let delivery = point.since_delivery.as_ref().map(|(a, n)| format!(", #{n} since {a}"));
            let exchange = point.exchange.as_ref().map(|(op, n)| format!(", #{n} for {op}"));
            let from = point.since.as_ref().map(|a| format!(" since {a}")).unwrap_or_default()
                + &delivery.unwrap_or_default()
                + &exchange.unwrap_or_default();
            let boundaries: Vec<String> = point.boundaries.iter().map(|b| format!(" = {b}")).collect();
            // Under a controlled schedule: which thread made the call, at which decision.
            let scheduled = match (&point.thread, point.step) {
                (Some(thread), Some(step)) => format!(", thread {thread} at decision {step}"),
                (Some(thread), None) => format!(", thread {thread}"),
                _ => String::new(),
            };
            format!(
                "runtime   incarnation {incarnation} {} {} #{}{from} ({}{scheduled}){}: KILL",
                point.when.name(),
                point.kind.name(),
                point.occurrence,
                point.what,
                boundaries.concat()
            )
        }
        Happening::Exited { incarnation, status } => {
            format!("runtime   incarnation {incarnation} exited on its own ({status})")
        }
        Happening::Frozen { incarnation, message, held: false } => {
            format!("runtime   {}: FREEZE (SIGSTOP incarnation {incarnation})", announcement(message))
        }
        Happening::Frozen { incarnation, message, held: true } => {
            format!("runtime   {}: FREEZE (held at its system call, incarnation {incarnation})", announcement(message))
        }
        Happening::SyscallFrozen { incarnation, point } => {
            format!("runtime   {}: FREEZE (held at its system call, incarnation {incarnation})", point.what)
        }
        Happening::Resumed { incarnation, message: Some(message), held: false } => {
            format!("harness   SIGCONT incarnation {incarnation}, answer {}: resume", announcement(message))
        }
        Happening::Resumed { incarnation, message: Some(message), held: true } => {
            format!("harness   incarnation {incarnation}, answer its system call at {}: resume", announcement(message))
        }
        Happening::Resumed { incarnation, message: None, .. } => {
            format!("harness   incarnation {incarnation}, answer its held system call: resume")
        }
        Happening::ZombieAnnounced { incarnation, message } => {
            format!("runtime   incarnation {incarnation} (outlived) {}: resume", announcement(message))
        }
        Happening::ZombieReadFenced { incarnation, what, .. } => {
            format!("runtime   incarnation {incarnation} (outlived) read the answer 409 fenced to {what}")
        }
        Happening::ZombieExited { incarnation, status } => {
            format!("runtime   incarnation {incarnation} (outlived) exited ({status})")
        }
        Happening::ZombieOutlived { incarnation, waited } => {
            format!("harness   incarnation {incarnation} (outlived) still running after {waited:.1?}: SIGKILL")
        }
        Happening::MissingDataDir { incarnation, refusal, .. } => {
            use crate::run::driver::Refusal;
            let what = match refusal {
                Refusal::Refused => "exited naming the path",
                Refusal::Unnamed { .. } => "exited WITHOUT naming the path",
                Refusal::Hung => "did NOT exit",
                Refusal::StartedAfresh => "STARTED AFRESH",
            };
            format!("runtime   incarnation {incarnation} on a hidden data dir: {what}; harness puts the dir back")
        }
        Happening::ServiceStarted { service, .. } => format!("harness   start service {service} (ready)"),
        Happening::ServiceExited { service, status } => format!("service   {service} EXITED on its own ({status})"),
        Happening::ServiceStopped { service } => format!("harness   stop service {service} (end of the run)"),
        Happening::ServiceKilled { fault, service, action, status } => {
            let signal = if action == "restart" { "SIGTERM" } else { "SIGKILL" };
            format!(
                "harness   {signal} service {service} (service fault {}, {action}; the worker lives on): it ended ({status})",
                fault + 1
            )
        }
        Happening::ServicePowerLoss { service, status, lost, points, syncs } => {
            let seen = format!("{points} system calls traced since its start, {syncs} of them syncs");
            let kept = match lost.is_empty() {
                true => "its data dir keeps what it synced, which was all it wrote".to_owned(),
                false => format!("its data dir keeps only what it synced — {}", lost.join("; ")),
            };
            format!("harness   power loss takes service {service} too ({status}; {seen}): {kept}")
        }
        Happening::ServiceHeld { fault, service, action, seconds } => match action.as_str() {
            "freeze" => format!(
                "harness   SIGSTOP service {service} (service fault {}, freeze for {seconds:.1?}; the worker lives on)",
                fault + 1
            ),
            _ => format!(
                "harness   cut the worker off service {service} (service fault {}, unreachable for {seconds:.1?}: its connections reset; the service runs on)",
                fault + 1
            ),
        },
        Happening::ServiceReleased { fault, service, action, after, why } => {
            let what = if action == "freeze" {
                format!("SIGCONT service {service}")
            } else {
                format!("service {service} reachable again")
            };
            let when = match why {
                Release::TimeUp => "its time was up".to_owned(),
                Release::Until { event } => format!("{event} came first"),
                Release::RunOver => "the run was over first".to_owned(),
            };
            format!("harness   {what} (service fault {}, {action} ended after {after:.1?}: {when})", fault + 1)
        }
        Happening::ServiceRestarted { service, port, waited } => {
            format!("harness   start service {service} again on port {port}, same data dir (ready after {waited:.1?})")
        }
    }
}

/// "before_dispatch charge attempt 1 -> ledger"
fn announcement(message: &crate::run::probe::ProbeMessage) -> String {
    let destination = message.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
    format!("{} {} attempt {}{destination}", message.boundary, message.operation_id, message.attempt)
}

pub fn describe_entry(entry: &Entry) -> String {
    let op = |o: &Option<String>| o.clone().unwrap_or_else(|| "<no operation>".into());
    let key = |k: &Option<String>| k.as_deref().map(|k| format!("key {k}")).unwrap_or_else(|| "NO KEY".into());
    match &entry.event {
        Event::ProviderCall { tool, operation, idempotency_key, call, effect, response, .. } => {
            let effect = match effect {
                Effect::Applied(r) => format!("applied {r}"),
                Effect::Replayed(r) => format!("replayed {r}"),
                Effect::NotApplied => "no effect".into(),
                Effect::KeyReused(first) => {
                    format!("refused: key used by {first} with other arguments, nothing applied")
                }
            };
            let response = match response {
                Response::Sent(s) => format!("answered {s}"),
                Response::Held => "answer held".into(),
                Response::Dropped => "connection dropped before a complete answer head".into(),
                Response::Cut => "answered 200 with a complete head, body cut short, connection closed".into(),
                Response::Garbage => "answered 200 with a body that is not JSON".into(),
                Response::NoRef => "answered 200 without provider_ref".into(),
            };
            format!(
                "provider  call {tool} for {} (call {call}, {}): {effect}, {response}",
                op(operation),
                key(idempotency_key)
            )
        }
        Event::ProviderLookup { tool, operation, by_key, by_ref, found, status, injected } => {
            let by = match (by_ref, by_key) {
                (Some(r), _) => format!("by ref {r}"),
                (None, Some(k)) => format!("by key {k}"),
                (None, None) => "by nothing".into(),
            };
            let outcome = match (found, status) {
                (true, _) => "found".to_owned(),
                (false, 404) => "not found".to_owned(),
                (false, s) => format!("answered {s}"),
            };
            let outcome = match injected {
                None => outcome,
                Some(Injected::Late(ms)) => format!("{outcome}, {ms} ms late (injected)"),
                Some(spoilt) => describe_injected(*spoilt),
            };
            format!("provider  lookup {tool} for {} {by}: {outcome}", op(operation))
        }
        Event::ConsumerReceipt { destination, operation, idempotency_key, applied, status, .. } => format!(
            "consumer  {destination} received {} ({}): {}, answered {status}",
            op(operation),
            key(idempotency_key),
            match (applied, (200..300).contains(status)) {
                (true, _) => "applied",
                // The fake consumer answers non-2xx only when a scenario's fault tells it to.
                (false, false) => "not applied (injected failure)",
                (false, true) => "duplicate, not applied",
            }
        ),
        Event::PolicyCheck { tenant, actor, operation, subject, answer, injected } => {
            let answer = match (answer, injected) {
                (_, Some(Injected::Late(ms))) => format!("{}, {ms} ms late (injected)", decision(*answer)),
                (_, Some(spoilt)) => format!("no decision, {}", describe_injected(*spoilt)),
                (answer, None) => decision(*answer).to_owned(),
            };
            let operation = operation.as_deref().map(|o| format!(" ({o})")).unwrap_or_default();
            format!("policy    {tenant}/{actor} {subject}{operation}: {answer}")
        }
        Event::ModelCall { operation, ask, conversation, stream, answer, late_ms } => {
            let how = match (stream, late_ms) {
                (true, None) => "streamed".to_owned(),
                (false, None) => "answered".to_owned(),
                (true, Some(ms)) => format!("streamed {ms} ms late (injected)"),
                (false, Some(ms)) => format!("answered {ms} ms late (injected)"),
            };
            let answer = match answer {
                ModelAnswer::ToolCall { id, tool, arguments } => {
                    let mut shown = arguments.clone();
                    if let Some(fields) = shown.as_object_mut() {
                        fields.remove("_killpoint");
                    }
                    format!("decided {id}: {tool} {shown}")
                }
                ModelAnswer::Text { text } => format!("final text {text:?}"),
                ModelAnswer::Injected { injected } => describe_injected(*injected),
                ModelAnswer::Refused { error } => format!("refused 400: {error}"),
            };
            format!("model     ask {ask} for {} (conversation {conversation}), {how}: {answer}", op(operation))
        }
        Event::Revocation { tenant, actor, subject } => {
            format!("harness   revoke {subject} for {tenant}/{}", actor.as_deref().unwrap_or("*"))
        }
        Event::Fenced { service, operation, what, current, .. } => {
            let stale = entry.incarnation.map_or("?".to_owned(), |n| n.to_string());
            let operation = operation.as_deref().map(|o| format!(" for {o}")).unwrap_or_default();
            format!(
                "{service:<9} {what}{operation} from incarnation {stale}: refused 409 fenced (incarnation {current} is current)"
            )
        }
    }
}

fn decision(answer: PolicyAnswer) -> &'static str {
    match answer {
        PolicyAnswer::Allowed => "allowed",
        PolicyAnswer::Refused => "refused",
        PolicyAnswer::NoDecision => "no decision",
    }
}

fn describe_injected(injected: Injected) -> String {
    match injected {
        Injected::Failed(status) => format!("answered {status} (injected)"),
        Injected::Dropped => "connection dropped before a complete answer head (injected)".into(),
        Injected::Garbage => "answered 200 with a body that is not JSON (injected)".into(),
        Injected::Late(ms) => format!("answered {ms} ms late (injected)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::boundary::Boundary;
    use crate::run::probe::ProbeMessage;

    /// The trace of the charge's deliveries after its result was written, one send per
    /// `(destination, consumer's status)`: the policy check, the receipt, and for an acknowledged
    /// send (202) the `after_delivery_send` announcement.
    fn deliveries(sends: &[(&str, u16)]) -> Vec<Line> {
        let mut lines = vec![mark_line(&mark(0, boundary("after_result_write", None, false)))];
        for &(destination, status) in sends {
            let seq = lines.len() as u64;
            lines.push(entry_line(&entry(seq, policy_check(destination))));
            lines.push(entry_line(&entry(seq + 1, receipt(destination, status))));
            if status == 202 {
                lines.push(mark_line(&mark(seq + 2, boundary("after_delivery_send", Some(destination), false))));
            }
        }
        lines
    }

    fn entry(seq: u64, event: Event) -> Entry {
        Entry { seq, at_micros: 0, incarnation: Some(1), event }
    }

    fn mark(seq: u64, happening: Happening) -> Mark {
        Mark { seq, at_micros: 0, happening }
    }

    fn policy_check(destination: &str) -> Event {
        Event::PolicyCheck {
            tenant: "acme".into(),
            actor: "agent-7".into(),
            operation: Some("charge".into()),
            subject: Subject::Destination(destination.into()),
            answer: PolicyAnswer::Allowed,
            injected: None,
        }
    }

    fn receipt(destination: &str, status: u16) -> Event {
        Event::ConsumerReceipt {
            destination: destination.into(),
            operation: Some("charge".into()),
            idempotency_key: Some("charge".into()),
            applied: status == 202,
            status,
            payload: serde_json::Value::Null,
        }
    }

    fn boundary(name: &str, destination: Option<&str>, killed: bool) -> Happening {
        let boundary: Boundary = serde_json::from_value(serde_json::Value::String(name.into())).expect(name);
        let message = ProbeMessage {
            boundary,
            operation_id: "charge".into(),
            attempt: 1,
            destination: destination.map(Into::into),
        };
        Happening::Boundary { message, killed }
    }

    /// `delivery_dead_letter` under load: the mailer's second send fell due before the ledger's
    /// third, but the worker woke late and sent both in one go, by name (ledger first). Nothing
    /// orders one destination's sends after the other's, so the snapshot must not either.
    #[test]
    fn the_order_in_which_two_destinations_retry_is_not_pinned() {
        let (ledger, mailer) = (("ledger", 503), ("mailer", 503));
        let on_time = deliveries(&[ledger, mailer, ledger, mailer, ("ledger", 202), mailer]);
        let late = deliveries(&[ledger, mailer, ledger, ("ledger", 202), mailer, mailer]);
        assert_eq!(
            normalise(late),
            normalise(on_time),
            "the same sends, with the mailer's second after the ledger's last instead of before it"
        );
    }

    /// A kill ends the stretch: the mailer's send before it and the ledger's after the restart
    /// stay where they happened, although "ledger" sorts first.
    #[test]
    fn a_delivery_step_stays_on_its_side_of_a_kill() {
        let mut lines = deliveries(&[("mailer", 503)]);
        lines.push(mark_line(&mark(3, Happening::Killed { incarnation: 1 })));
        lines.push(mark_line(&mark(4, Happening::Started { incarnation: 2 })));
        lines.extend(deliveries(&[("ledger", 202)]).into_iter().skip(1));
        let texts: Vec<String> = lines.iter().map(|l| l.text.clone()).collect();
        assert_eq!(normalise(lines), texts, "a trace with one delivery step on each side of a restart");
    }

    /// With two services, a kill the power loss took `pg` with says so, and says `kv` (not
    /// traced: it had no power-loss mark) lived on; a kill with no power-loss mark after it says both
    /// lived on.
    #[test]
    fn a_kill_says_which_services_a_power_loss_took() {
        let started = |service: &str| Happening::ServiceStarted {
            service: service.into(),
            port: 1,
            waited: std::time::Duration::ZERO,
        };
        let power_loss = Happening::ServicePowerLoss {
            service: "pg".into(),
            status: "signal 9".into(),
            lost: vec!["base/5/16384: vanished (its name never synced)".into()],
            points: 12,
            syncs: 3,
        };
        let restarted =
            Happening::ServiceRestarted { service: "pg".into(), port: 1, waited: std::time::Duration::ZERO };
        let timeline: Vec<Mark> = [
            started("pg"),
            started("kv"),
            Happening::Killed { incarnation: 1 },
            power_loss,
            restarted,
            Happening::Started { incarnation: 2 },
            Happening::Killed { incarnation: 2 },
        ]
        .into_iter()
        .enumerate()
        .map(|(i, h)| mark(i as u64, h))
        .collect();
        let texts = mark_texts(&timeline);
        assert!(
            texts[2].ends_with("(a power loss: service pg goes down with it) (the worker only: service kv lives on)"),
            "{}",
            texts[2]
        );
        assert!(texts[3].contains("power loss takes service pg too (signal 9; 12 system calls traced since its start, 3 of them syncs): its data dir keeps only what it synced — base/5/16384: vanished"), "{}", texts[3]);
        assert!(texts[6].ends_with("(the worker only: service kv, pg lives on)"), "{}", texts[6]);
    }
}
