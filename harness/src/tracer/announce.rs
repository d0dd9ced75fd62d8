//! The trace socket's protocol, the tracer's end: one point out as a JSON line (and into the
//! log), then wait for `{"action":"resume"}` — or, once the harness answered `{"action":"go_on"}`,
//! not wait at all, or only at explored points (`Channel::asking`).

use std::io::Write;

use super::error::TracerError;
use super::pending::Pending;
use super::point::{Asking, HttpAnswer, Point, When};
use super::state::Tracer;

impl Tracer {
    /// Sends one point and waits for the harness's answer; the thread stays stopped meanwhile.
    pub(super) fn announce(
        &mut self,
        tid: i32,
        when: When,
        pending: &Pending,
        ret: Option<i64>,
        answer: Option<HttpAnswer>,
    ) -> Result<(), TracerError> {
        self.n += 1;
        *self.tally.points.entry(pending.kind).or_default() += 1;
        if self.channel.is_none() && self.log.is_none() {
            return Ok(());
        }
        let point = Point {
            n: self.n,
            when,
            call: pending.call.name().to_owned(),
            kind: pending.kind,
            path: pending.path.clone(),
            to: pending.to.clone(),
            peer: pending.peer,
            bytes: pending.bytes,
            ret,
            synced: pending.synced,
            tid,
            thread: self.schedule.as_ref().map(|s| s.threads.label(tid)),
            step: self.schedule.as_ref().and_then(|s| s.step_of(tid)),
            // A request is told on its `before` point, an answer on the receive that completes it.
            request: if when == When::Before || answer.is_some() { pending.request.clone() } else { None },
            answer,
        };
        let mut line = serde_json::to_string(&point).expect("a point serialises");
        line.push('\n');
        if let Some(log) = &mut self.log {
            // A log that cannot be written loses measurements, not correctness: carry on.
            let _ = log.write_all(line.as_bytes());
        }
        let Some(channel) = &mut self.channel else { return Ok(()) };
        channel.send(&line)?;
        if !channel.asking.asks(pending.kind, when) {
            return Ok(());
        }
        let Some(answer) = channel.answer()? else {
            return Err(TracerError::Answer { found: "the connection closed".to_owned() });
        };
        match serde_json::from_str::<serde_json::Value>(&answer) {
            Ok(value) if value == serde_json::json!({"action": "resume"}) => Ok(()),
            Ok(value) if value == serde_json::json!({"action": "go_on"}) => {
                channel.asking = Asking::Never;
                Ok(())
            }
            Ok(value) if value == serde_json::json!({"action": "go_on", "ask": "explored"}) => {
                channel.asking = Asking::Explored;
                Ok(())
            }
            _ => Err(TracerError::Answer { found: answer }),
        }
    }
}
