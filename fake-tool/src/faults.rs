//! Fault knobs: what the fake world does wrong, on purpose, for one request.
//!
//! The harness arms a fault before the runtime reaches it. A provider fault addresses a call by
//! the planted operation identity and its call number, so "the second call for op-1" is
//! expressible; it fires once. A consumer hold addresses the n-th receipt of one operation at one
//! destination, likewise once. A consumer fault fails a destination's next `times` receipts.
//! Faults that are kill points carry the harness's `tag`, echoed in the [`crate::KillPoint`]
//! the world sends when it reaches them.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Mutex;

/// What the provider answers to a faulted call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultResponse {
    /// Hold the answer: the harness is told, and kills the runtime before it arrives.
    Hold,
    /// Answer with this status code (e.g. 503) instead of the real answer.
    Status(u16),
    /// Start a `200` answer and break the connection before its body: the runtime cannot read it.
    Drop,
    /// Answer normally, this many milliseconds late.
    Delay(u64),
    /// Answer normally and tell the harness at the same moment, so it kills the runtime as soon as
    /// it can: the closest an outsider gets to "after the provider's success, before the result
    /// is written". The runtime may or may not have written the result by then.
    AnswerAndSignal,
}

/// A fault on one provider call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFault {
    /// The planted operation identity (`_killpoint.operation`).
    pub operation: String,
    /// Which call for that operation, 1-based.
    pub call: u32,
    /// Whether the side effect happens before the fault (the dangerous case).
    pub effect: bool,
    pub response: FaultResponse,
    /// Echoed in the kill point signal (`Hold`, `AnswerAndSignal`).
    pub tag: u64,
}

/// A kill point at a consumer: it applies the n-th receipt of one operation and holds its `202`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerHold {
    pub operation: String,
    pub destination: String,
    /// Which receipt of that operation at that destination, 1-based.
    pub receipt: u32,
    pub tag: u64,
}

/// A fault on a destination's receipts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsumerFault {
    pub destination: String,
    /// How many receipts fail; `None` fails every one (a dead consumer).
    pub times: Option<u32>,
    /// Whether the consumer applies the event before failing the answer.
    pub apply: bool,
    /// The status it answers, e.g. 503.
    pub status: u16,
}

/// Every armed fault of one world.
#[derive(Debug, Default)]
pub struct Faults {
    provider: Mutex<HashMap<(String, u32), ProviderFault>>,
    consumer: Mutex<HashMap<String, ConsumerFault>>,
    holds: Mutex<HashMap<(String, String, u32), ConsumerHold>>,
}

impl Faults {
    pub fn arm_provider(&self, fault: ProviderFault) {
        let key = (fault.operation.clone(), fault.call);
        self.provider.lock().expect("faults lock").insert(key, fault);
    }

    pub fn arm_consumer(&self, fault: ConsumerFault) {
        self.consumer.lock().expect("faults lock").insert(fault.destination.clone(), fault);
    }

    pub fn arm_consumer_hold(&self, hold: ConsumerHold) {
        let key = (hold.operation.clone(), hold.destination.clone(), hold.receipt);
        self.holds.lock().expect("faults lock").insert(key, hold);
    }

    /// Takes the hold armed for this receipt, if any.
    pub(crate) fn take_consumer_hold(&self, operation: &str, destination: &str, receipt: u32) -> Option<ConsumerHold> {
        self.holds.lock().expect("faults lock").remove(&(operation.to_owned(), destination.to_owned(), receipt))
    }

    /// Takes the fault armed for this call, if any: each provider fault fires once.
    pub(crate) fn take_provider(&self, operation: &str, call: u32) -> Option<ProviderFault> {
        self.provider.lock().expect("faults lock").remove(&(operation.to_owned(), call))
    }

    /// The consumer fault to apply to this receipt, counting it down.
    pub(crate) fn consume_consumer(&self, destination: &str) -> Option<ConsumerFault> {
        let mut faults = self.consumer.lock().expect("faults lock");
        let fault = faults.get_mut(destination)?;
        match &mut fault.times {
            Some(0) => None,
            Some(n) => {
                *n -= 1;
                Some(fault.clone())
            }
            None => Some(fault.clone()),
        }
    }
}
