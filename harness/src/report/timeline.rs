//! A run's events on the shared clock, by lane (the runtime, the provider, each consumer, the
//! policy service): what the HTML report draws and what `trace.jsonl` in kept artifacts holds.

use crate::run::driver::{Happening, Mark, Run};
use crate::run::retry_log::{RetryKind, RetryLine};
use crate::run::trace::{describe_entry, mark_texts};
use fake_tool::{Entry, Event, Service};
use serde::Serialize;

/// Where an event is drawn: whose view of the run it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "lane", content = "destination")]
pub enum Lane {
    /// What the harness did (starts, kills, submissions, service faults, power losses).
    Harness,
    /// What the runtime announced (its boundaries) and its retry lines.
    Runtime,
    /// The model that decides for task operations.
    Model,
    Provider,
    /// One consumer, by destination.
    Consumer(String),
    Policy,
}

impl Lane {
    pub(crate) fn label(&self) -> String {
        match self {
            Lane::Harness => "harness".into(),
            Lane::Runtime => "runtime".into(),
            Lane::Model => "model".into(),
            Lane::Provider => "provider".into(),
            Lane::Consumer(d) => format!("consumer {d}"),
            Lane::Policy => "policy".into(),
        }
    }
}

/// What kind of mark an event gets on the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Plain,
    /// The runtime was SIGKILLed (or frozen) here, or one of its services taken down by a
    /// `[[service_fault]]`: a red line across every lane.
    Kill,
    /// A new incarnation started on the same data dir, or a service started again on its own: a
    /// green line across every lane.
    Restart,
    /// A retry the runtime logged (execution or delivery), from its stderr.
    Retry,
}

/// One event of a run, placed on the shared clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEvent {
    /// The row's own number, no other row's: for a harness mark or a ledger entry, its tick of the
    /// shared clock (the `#N` a violation's evidence names). A runtime log line is not on that
    /// clock; it is numbered after the clock's last tick, in the order the runtime wrote it.
    pub seq: u64,
    /// A retry line's request: the `seq` of the provider call or receipt it led to, drawn just
    /// before it. Absent when that request never reached the world (the line is drawn at the
    /// end), and for every other row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub led_to: Option<u64>,
    /// Microseconds since the scenario's world started (shown, never used for order).
    pub at_micros: u64,
    #[serde(flatten)]
    pub lane: Lane,
    pub kind: Kind,
    pub text: String,
}

/// A run's events in clock order, as the report draws them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Timeline {
    pub events: Vec<TimelineEvent>,
    /// The fake world's signal: idempotency keys that arrived again, by who saw them
    /// (`provider`, `consumer <destination>`).
    pub duplicate_keys: Vec<(String, u64)>,
    /// The ledger entries that are retries: a provider call after an operation's first, a
    /// receipt after the first of an operation at a destination (by `seq`); before the run's
    /// first restore, if it had one.
    pub retried: Vec<u64>,
    /// Such retries after a restore (`--crash restore`): the backup may not hold the attempts
    /// they repeat, so no retry line is owed for them (CONTRACT.md section 13, "What cannot be
    /// owed": counts of what the lost host did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub retried_after_restore: Vec<u64>,
    /// Under a controlled schedule: which thread's call went at each decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<crate::report::schedule::ScheduleView>,
}

impl Timeline {
    /// The harness's marks and the fake world's ledger, merged on their clock, with the runtime's
    /// retry lines from its stderr.
    pub fn of(run: &Run) -> Timeline {
        let schedule = crate::report::schedule::ScheduleView::of(run);
        Timeline { schedule, ..Timeline::merged(&run.ledger, &run.timeline, &crate::run::retry_log::stderr_of(run)) }
    }

    /// [`Timeline::of`] from its parts: the ledger, the harness's marks, the runtime's stderr.
    fn merged(ledger: &[Entry], marks: &[Mark], stderr: &str) -> Timeline {
        let mut events: Vec<TimelineEvent> =
            ledger.iter().map(entry_event).chain(marks.iter().zip(mark_texts(marks)).map(mark_event)).collect();
        let last = events.iter().max_by_key(|e| e.seq).map_or((0, 0), |e| (e.seq, e.at_micros));
        events.extend(retries(stderr, ledger, last));
        events.sort_by_key(TimelineEvent::place);
        let keys = fake_tool::DuplicateKeys::of(ledger);
        let duplicate_keys = std::iter::once(("provider".to_owned(), keys.provider))
            .chain(keys.consumers.into_iter().map(|(d, n)| (format!("consumer {d}"), n)))
            .collect();
        let restored_at = marks.iter().find(|m| matches!(m.happening, Happening::Restored { .. })).map(|m| m.seq);
        let (retried, retried_after_restore) =
            retried(ledger).into_iter().partition(|seq| restored_at.is_none_or(|at| *seq < at));
        Timeline { events, duplicate_keys, retried, retried_after_restore, schedule: None }
    }

    /// The lanes this timeline uses, in the order they are drawn.
    pub(crate) fn lanes(&self) -> Vec<Lane> {
        let mut consumers: Vec<Lane> =
            self.events.iter().filter(|e| matches!(e.lane, Lane::Consumer(_))).map(|e| e.lane.clone()).collect();
        consumers.sort();
        consumers.dedup();
        let used = |lane: Lane| self.events.iter().any(|e| e.lane == lane).then_some(lane);
        let mut lanes: Vec<Lane> = used(Lane::Harness).into_iter().collect();
        lanes.push(Lane::Runtime);
        lanes.extend(used(Lane::Model));
        lanes.push(Lane::Provider);
        lanes.extend(consumers);
        lanes.push(Lane::Policy);
        lanes
    }
}

impl TimelineEvent {
    /// Where the row is drawn: a retry line just before the request it led to (or after every
    /// row of the clock, being numbered after it), every other row at its tick.
    fn place(&self) -> (u64, bool) {
        (self.led_to.unwrap_or(self.seq), self.kind != Kind::Retry)
    }
}

/// The ledger entries that are retries: a provider call after an operation's first, a receipt
/// after the first of an operation at a destination (by `seq`).
fn retried(ledger: &[Entry]) -> Vec<u64> {
    let mut firsts = std::collections::HashSet::new();
    ledger
        .iter()
        .filter(|e| match &e.event {
            Event::ProviderCall { operation: Some(o), .. } => !firsts.insert((o.clone(), None)),
            Event::ConsumerReceipt { operation: Some(o), destination, .. } => {
                !firsts.insert((o.clone(), Some(destination.clone())))
            }
            _ => false,
        })
        .map(|e| e.seq)
        .collect()
}

/// `mark` as an event, in the words `text` ([`mark_texts`]).
fn mark_event((mark, text): (&Mark, String)) -> TimelineEvent {
    let kind = match &mark.happening {
        Happening::Killed { .. }
        | Happening::SyscallKill { .. }
        | Happening::Frozen { .. }
        | Happening::SyscallFrozen { .. }
        | Happening::ZombieOutlived { .. }
        | Happening::ServiceKilled { .. }
        | Happening::ServicePowerLoss { .. }
        | Happening::ServiceHeld { .. } => Kind::Kill,
        Happening::Started { incarnation } if *incarnation > 1 => Kind::Restart,
        Happening::ServiceRestarted { .. } | Happening::ServiceReleased { .. } => Kind::Restart,
        _ => Kind::Plain,
    };
    TimelineEvent { seq: mark.seq, led_to: None, at_micros: mark.at_micros, lane: lane_of(&text), kind, text }
}

/// A mark's lane, from the party its words begin with (`harness   SIGKILL incarnation 1`,
/// `runtime   before_dispatch charge …`: the text trace's column). What the harness did to a
/// service is the harness's; a service's own exit, the runtime's (a service is part of it).
fn lane_of(text: &str) -> Lane {
    match text.split_once(' ') {
        Some(("harness", _)) => Lane::Harness,
        _ => Lane::Runtime,
    }
}

fn entry_event(entry: &Entry) -> TimelineEvent {
    let lane = match &entry.event {
        Event::ProviderCall { .. } | Event::ProviderLookup { .. } => Lane::Provider,
        Event::ConsumerReceipt { destination, .. } => Lane::Consumer(destination.clone()),
        Event::ModelCall { .. } => Lane::Model,
        Event::PolicyCheck { .. } | Event::Revocation { .. } => Lane::Policy,
        Event::Fenced { service: Service::Provider, .. } => Lane::Provider,
        Event::Fenced { service: Service::Policy, .. } => Lane::Policy,
        Event::Fenced { service: Service::Consumer, destination, .. } => {
            Lane::Consumer(destination.clone().unwrap_or_else(|| "?".into()))
        }
    };
    TimelineEvent {
        seq: entry.seq,
        led_to: None,
        at_micros: entry.at_micros,
        lane,
        kind: Kind::Plain,
        text: describe_entry(entry),
    }
}

impl RetryLine {
    /// The ledger entry of the request the retry announced: the provider's call `attempt` of the
    /// operation, or the destination's receipt number `attempt` (`None`: it never reached the
    /// world, or a delivery retry names no destination).
    fn request<'a>(&self, ledger: &'a [Entry]) -> Option<&'a Entry> {
        let op = self.operation_id.as_str();
        match (self.retry, &self.destination) {
            (RetryKind::Execution, _) => ledger.iter().find(|e| {
                matches!(&e.event, Event::ProviderCall { operation: Some(o), call, .. } if o == op && u64::from(*call) == self.attempt)
            }),
            (RetryKind::Delivery, Some(d)) => ledger
                .iter()
                .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination, operation: Some(o), .. } if destination == d && o == op))
                .nth(usize::try_from(self.attempt).unwrap_or(usize::MAX).checked_sub(1)?),
            (RetryKind::Delivery, None) => None,
        }
    }

    fn describe(&self) -> String {
        let kind = match self.retry {
            RetryKind::Execution => "execution",
            RetryKind::Delivery => "delivery",
        };
        let to = self.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
        let reason = self.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
        format!("runtime   log: {kind} retry of {}{to}, attempt {}{reason}", self.operation_id, self.attempt)
    }
}

/// The runtime's retry lines on `stderr`, each numbered after `last`, the clock's last tick
/// (seq, at_micros), and led to the request it announced. A retry whose request never reached the
/// world (killed first) is drawn at the end, at the time of the clock's last tick.
fn retries(stderr: &str, ledger: &[Entry], last: (u64, u64)) -> Vec<TimelineEvent> {
    let mut out = Vec::new();
    for retry in stderr.lines().filter_map(RetryLine::parse) {
        let request = retry.request(ledger);
        out.push(TimelineEvent {
            seq: last.0 + 1 + out.len() as u64,
            led_to: request.map(|e| e.seq),
            at_micros: request.map_or(last.1, |e| e.at_micros),
            lane: Lane::Runtime,
            kind: Kind::Retry,
            text: retry.describe(),
        });
    }
    out
}

/// The `#seq` numbers a violation's evidence lines name (`#12 provider  call …`).
pub(crate) fn evidence_seqs(evidence: &[String]) -> Vec<u64> {
    evidence
        .iter()
        .filter_map(|line| line.strip_prefix('#')?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use fake_tool::{Effect, Response};

    fn call(seq: u64, op: &str, call: u32) -> Entry {
        let event = Event::ProviderCall {
            tool: "charge_card".into(),
            operation: Some(op.into()),
            idempotency_key: Some(op.into()),
            arguments: None,
            call,
            effect: Effect::Applied(format!("charge_card-00000{call}")),
            response: Response::Sent(200),
            result: None,
        };
        Entry { seq, at_micros: seq * 1000, incarnation: Some(1), event }
    }

    fn receipt(seq: u64, op: &str, destination: &str, status: u16) -> Entry {
        let event = Event::ConsumerReceipt {
            destination: destination.into(),
            operation: Some(op.into()),
            idempotency_key: Some(op.into()),
            applied: status == 202,
            status,
            payload: serde_json::Value::Null,
        };
        Entry { seq, at_micros: seq * 1000, incarnation: Some(1), event }
    }

    fn started(seq: u64, incarnation: u32) -> Mark {
        Mark { seq, at_micros: seq * 1000, happening: Happening::Started { incarnation } }
    }

    const RETRIES: &str = concat!(
        r#"{"log":"retry","retry":"execution","operation_id":"charge","attempt":2,"reason":"lookup: not found"}"#,
        "\n",
        r#"{"log":"retry","retry":"delivery","operation_id":"charge","destination":"ledger","attempt":2,"reason":"HTTP 503"}"#,
        "\n",
        r#"{"log":"retry","retry":"delivery","operation_id":"charge","destination":"mailer","attempt":2,"reason":"killed before"}"#,
        "\n",
    );

    /// Issue 32 item 8: the HTML's event table labelled what the harness did as the runtime's.
    #[test]
    fn a_mark_is_on_the_lane_of_the_party_that_did_it() {
        assert_eq!(lane_of("harness   SIGKILL incarnation 1"), Lane::Harness);
        assert_eq!(lane_of("runtime   before_dispatch charge attempt 1: resume"), Lane::Runtime);
        assert_eq!(lane_of("service   temporal EXITED on its own (exit status: 1)"), Lane::Runtime);
    }

    #[test]
    fn every_row_has_its_own_number_and_a_retry_is_drawn_before_its_request() {
        let ledger = [
            call(2, "charge", 1),
            call(4, "charge", 2),
            receipt(5, "charge", "ledger", 503),
            receipt(6, "charge", "ledger", 202),
        ];
        let timeline = Timeline::merged(&ledger, &[started(1, 1), started(3, 2), started(7, 3)], RETRIES);
        let mut numbers: Vec<u64> = timeline.events.iter().map(|e| e.seq).collect();
        numbers.sort();
        numbers.dedup();
        assert_eq!(numbers.len(), timeline.events.len(), "a number names two rows: {:#?}", timeline.events);
        let rows: Vec<(u64, Option<u64>, Kind)> = timeline.events.iter().map(|e| (e.seq, e.led_to, e.kind)).collect();
        // The log lines are numbered after the clock's last tick (7), in the order written; the
        // mailer's request never reached the world, so its line is drawn last.
        assert_eq!(
            rows,
            [
                (1, None, Kind::Plain),
                (2, None, Kind::Plain),
                (3, None, Kind::Restart),
                (8, Some(4), Kind::Retry),
                (4, None, Kind::Plain),
                (5, None, Kind::Plain),
                (9, Some(6), Kind::Retry),
                (6, None, Kind::Plain),
                (7, None, Kind::Restart),
                (10, None, Kind::Retry),
            ]
        );
        assert_eq!(timeline.retried, [4, 6], "the second call and the second receipt are retries");
    }

    /// Issue 34: after a restore the runtime numbers attempts from its backup, which may not hold
    /// the first call: a call again after the restore is kept apart, owed no retry line.
    #[test]
    fn a_retry_after_a_restore_is_kept_apart() {
        let ledger = [call(2, "charge", 1), call(4, "charge", 2), call(6, "charge", 3)];
        let restored = Mark {
            seq: 5,
            at_micros: 5000,
            happening: Happening::Restored {
                incarnation: 1,
                lag: crate::model::crash::Lag::Syncs(2),
                back: 2,
                age_ms: 3,
                path: "host-2/data".into(),
                lost: Vec::new(),
            },
        };
        let timeline = Timeline::merged(&ledger, &[started(1, 1), restored, started(7, 2)], "");
        assert_eq!(timeline.retried, [4], "the retry before the restore");
        assert_eq!(timeline.retried_after_restore, [6]);
    }

    #[test]
    fn a_retry_line_is_read_as_json_with_or_without_spaces_and_other_lines_are_not() {
        let stderr = concat!(
            // Python's json.dumps: a space after each `:` and `,`.
            r#"{"log": "retry", "retry": "execution", "operation_id": "charge", "attempt": 2, "reason": "lookup: not found"}"#,
            "\n",
            r#"{"log":"retry","retry":"delivery","operation_id":"charge","destination":"ledger","attempt":2,"reason":"HTTP 503"}"#,
            "\n",
            "retrying charge: {\"log\":\"retry\"} is what a retry line looks like\n",
            r#"{"log": "retry", "retry": "execution", "operation_id": "charge", "attempt": 2"#,
            "\n",
            r#"{"log":"retried","retry":"execution","operation_id":"charge","attempt":2,"reason":"not a retry line"}"#,
            "\n",
            r#"  {"log" : "retry" , "retry" : "delivery" , "operation_id" : "charge" , "destination" : "ledger" , "attempt" : 3}"#,
            "\n",
        );
        let ledger = [
            call(1, "charge", 1),
            call(2, "charge", 2),
            receipt(3, "charge", "ledger", 503),
            receipt(4, "charge", "ledger", 503),
            receipt(5, "charge", "ledger", 202),
        ];
        let found: Vec<(Option<u64>, String)> =
            retries(stderr, &ledger, (5, 5000)).into_iter().map(|e| (e.led_to, e.text)).collect();
        assert_eq!(
            found,
            [
                (Some(2), "runtime   log: execution retry of charge, attempt 2: lookup: not found".to_owned()),
                (Some(4), "runtime   log: delivery retry of charge -> ledger, attempt 2: HTTP 503".to_owned()),
                (Some(5), "runtime   log: delivery retry of charge -> ledger, attempt 3".to_owned()),
            ]
        );
        // What the checklist's "from logs" question asks: every retried request has its line.
        let timeline = Timeline::merged(&ledger, &[], stderr);
        let logged: Vec<u64> = timeline.events.iter().filter_map(|e| e.led_to).collect();
        assert_eq!(timeline.retried, logged, "each retried request has its retry line");
    }
}
