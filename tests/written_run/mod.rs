//! A run written by hand — the world's ledger and the harness's timeline on one clock — for the
//! test files that judge what a kill can and cannot explain (`kill_slack.rs`,
//! `policy_in_flight.rs`) without starting a runtime. Each adds the steps its stories need in an
//! `impl Story` of its own.

use fake_tool::{Entry, Event, PolicyAnswer, Subject};
use killpoint::run::artifacts::Artifacts;
use killpoint::run::client::OperationReport;
use killpoint::run::driver::Mark;
use killpoint::{Happening, Hit, Run};
use std::collections::BTreeMap;

/// A run being written: each entry and mark takes the next `seq`, a millisecond apart.
pub struct Story {
    seq: u64,
    pub ledger: Vec<Entry>,
    pub timeline: Vec<Mark>,
    /// The incarnation running now: the one `entry` stamps.
    pub incarnation: u32,
}

impl Story {
    /// Incarnation 1, started.
    pub fn new() -> Story {
        let mut story = Story { seq: 0, ledger: Vec::new(), timeline: Vec::new(), incarnation: 1 };
        story.mark(Happening::Started { incarnation: 1 });
        story
    }

    fn tick(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    pub fn mark(&mut self, happening: Happening) {
        let seq = self.tick();
        self.timeline.push(Mark { seq, at_micros: seq * 1000, happening });
    }

    /// An entry the world recorded for a request stamped `incarnation`.
    pub fn entry_of(&mut self, incarnation: u32, event: Event) {
        let seq = self.tick();
        self.ledger.push(Entry { seq, at_micros: seq * 1000, incarnation: Some(incarnation), event });
    }

    pub fn entry(&mut self, event: Event) {
        self.entry_of(self.incarnation, event);
    }

    pub fn check_of(&mut self, incarnation: u32, op: &str, subject: Subject, answer: PolicyAnswer) {
        let (tenant, actor, operation) = ("acme".to_owned(), "agent-7".to_owned(), Some(op.to_owned()));
        self.entry_of(incarnation, Event::PolicyCheck { tenant, actor, operation, subject, answer, injected: None });
    }

    pub fn checked(&mut self, op: &str, subject: Subject, answer: PolicyAnswer) {
        self.check_of(self.incarnation, op, subject, answer);
    }

    /// The running incarnation killed, and the next one started.
    pub fn killed(&mut self) {
        let incarnation = self.incarnation;
        self.mark(Happening::Killed { incarnation });
        self.incarnation += 1;
        self.mark(Happening::Started { incarnation: incarnation + 1 });
    }

    /// The run, with the runtime's final `reports`, the faults' `hits` and its metrics text; its
    /// run directory is a fresh temp dir named after `name`.
    pub fn run(
        self,
        name: &str,
        reports: BTreeMap<String, OperationReport>,
        hits: Vec<Hit>,
        metrics: Option<String>,
    ) -> Run {
        Run {
            ledger: self.ledger,
            timeline: self.timeline,
            reports,
            unsettled: Vec::new(),
            probe: true,
            crash: killpoint::model::crash::Crash::Process,
            killed: vec![None; hits.len()],
            hits,
            aborted: None,
            harness_failure: None,
            incarnations: self.incarnation,
            restarts: Vec::new(),
            recoveries: Vec::new(),
            fingerprints: Vec::new(),
            syscall_points: Vec::new(),
            syscall_hits: Vec::new(),
            after_kill: None,
            service_hits: Vec::new(),
            metrics: metrics.map(Ok),
            artifacts: Artifacts::create(name).expect("a temp dir for the run"),
        }
    }
}
