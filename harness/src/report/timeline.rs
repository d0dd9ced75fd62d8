//! A run's events on the shared clock, by lane (the runtime, the provider, each consumer, the
//! policy service): what the HTML report draws and what `trace.jsonl` in kept artifacts holds.

use crate::run::driver::{Happening, Run};
use crate::run::trace::{describe_entry, describe_mark};
use fake_tool::{Entry, Event, Service};
use serde::Serialize;

/// Where an event is drawn: whose view of the run it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "lane", content = "destination")]
pub enum Lane {
    /// The runtime and what the harness did to it (starts, kills, submissions).
    Runtime,
    Provider,
    /// One consumer, by destination.
    Consumer(String),
    Policy,
}

impl Lane {
    pub(crate) fn label(&self) -> String {
        match self {
            Lane::Runtime => "runtime".into(),
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
    /// The runtime was SIGKILLed (or frozen) here: a red line across every lane.
    Kill,
    /// A new incarnation started on the same data dir: a green line across every lane.
    Restart,
    /// A retry the runtime logged (execution or delivery), from its stderr.
    Retry,
}

/// One event of a run, placed on the shared clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineEvent {
    /// The shared logical clock: harness marks and ledger entries are ordered by it.
    pub seq: u64,
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
    /// receipt after the first of an operation at a destination (by `seq`).
    pub retried: Vec<u64>,
}

impl Timeline {
    /// The harness's marks and the fake world's ledger, merged on their clock.
    pub fn of(run: &Run) -> Timeline {
        let mut events: Vec<TimelineEvent> = run
            .ledger
            .iter()
            .map(entry_event)
            .chain(run.timeline.iter().map(|m| TimelineEvent {
                seq: m.seq,
                at_micros: m.at_micros,
                lane: Lane::Runtime,
                kind: match &m.happening {
                    Happening::Killed { .. }
                    | Happening::SyscallKill { .. }
                    | Happening::Frozen { .. }
                    | Happening::ZombieOutlived { .. } => Kind::Kill,
                    Happening::Started { incarnation } if *incarnation > 1 => Kind::Restart,
                    _ => Kind::Plain,
                },
                text: describe_mark(m),
            }))
            .collect();
        let stderr = std::fs::read(run.artifacts_path().join("logs").join("stderr.log")).unwrap_or_default();
        events.extend(retries(&String::from_utf8_lossy(&stderr), &run.ledger));
        // A retry is drawn just before the request it led to (same `seq`, sorted first).
        events.sort_by_key(|e| (e.seq, e.kind != Kind::Retry));
        let keys = fake_tool::DuplicateKeys::of(&run.ledger);
        let duplicate_keys = std::iter::once(("provider".to_owned(), keys.provider))
            .chain(keys.consumers.into_iter().map(|(d, n)| (format!("consumer {d}"), n)))
            .collect();
        let mut firsts = std::collections::HashSet::new();
        let retried = run
            .ledger
            .iter()
            .filter(|e| match &e.event {
                Event::ProviderCall { operation: Some(o), .. } => !firsts.insert((o.clone(), None)),
                Event::ConsumerReceipt { operation: Some(o), destination, .. } => {
                    !firsts.insert((o.clone(), Some(destination.clone())))
                }
                _ => false,
            })
            .map(|e| e.seq)
            .collect();
        Timeline { events, duplicate_keys, retried }
    }

    /// The lanes this timeline uses, in the order they are drawn.
    pub(crate) fn lanes(&self) -> Vec<Lane> {
        let mut consumers: Vec<Lane> =
            self.events.iter().filter(|e| matches!(e.lane, Lane::Consumer(_))).map(|e| e.lane.clone()).collect();
        consumers.sort();
        consumers.dedup();
        let mut lanes = vec![Lane::Runtime, Lane::Provider];
        lanes.extend(consumers);
        lanes.push(Lane::Policy);
        lanes
    }
}

fn entry_event(entry: &Entry) -> TimelineEvent {
    let lane = match &entry.event {
        Event::ProviderCall { .. } | Event::ProviderLookup { .. } => Lane::Provider,
        Event::ConsumerReceipt { destination, .. } => Lane::Consumer(destination.clone()),
        Event::PolicyCheck { .. } | Event::Revocation { .. } => Lane::Policy,
        Event::Fenced { service: Service::Provider, .. } => Lane::Provider,
        Event::Fenced { service: Service::Policy, .. } => Lane::Policy,
        Event::Fenced { service: Service::Consumer, destination, .. } => {
            Lane::Consumer(destination.clone().unwrap_or_else(|| "?".into()))
        }
    };
    TimelineEvent { seq: entry.seq, at_micros: entry.at_micros, lane, kind: Kind::Plain, text: describe_entry(entry) }
}

/// The runtime's structured retry lines (`{"log":"retry","retry":"execution"|"delivery",…}` on
/// stderr), placed on the clock at the request each led to: the provider's call `attempt` of the
/// operation, or the destination's receipt number `attempt`. A retry whose request never reached
/// the world (killed first) is drawn at the end.
fn retries(stderr: &str, ledger: &[Entry]) -> Vec<TimelineEvent> {
    let last = ledger.last().map_or((0, 0), |e| (e.seq, e.at_micros));
    let mut out = Vec::new();
    for line in stderr.lines().filter(|l| l.starts_with('{') && l.contains("\"log\":\"retry\"")) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let (Some(kind), Some(op), Some(attempt)) =
            (v["retry"].as_str(), v["operation_id"].as_str(), v["attempt"].as_u64())
        else {
            continue;
        };
        let destination = v["destination"].as_str();
        let reason = v["reason"].as_str().unwrap_or_default();
        let target = match (kind, destination) {
            ("execution", _) => ledger.iter().find(|e| {
                matches!(&e.event, Event::ProviderCall { operation: Some(o), call, .. } if o == op && u64::from(*call) == attempt)
            }),
            ("delivery", Some(d)) => ledger
                .iter()
                .filter(|e| matches!(&e.event, Event::ConsumerReceipt { destination, operation: Some(o), .. } if destination == d && o == op))
                .nth(usize::try_from(attempt).unwrap_or(usize::MAX).saturating_sub(1)),
            _ => continue,
        };
        let (seq, at_micros) = target.map_or(last, |e| (e.seq, e.at_micros));
        let to = destination.map(|d| format!(" -> {d}")).unwrap_or_default();
        out.push(TimelineEvent {
            seq,
            at_micros,
            lane: Lane::Runtime,
            kind: Kind::Retry,
            text: format!("runtime   log: {kind} retry of {op}{to}, attempt {attempt}: {reason}"),
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
