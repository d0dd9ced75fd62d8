//! Fault knobs: what the fake world does wrong, on purpose, for one request.
//!
//! The harness arms a fault before the runtime reaches it. A provider fault addresses a call by
//! the planted operation identity and its call number, so "the second call for op-1" is
//! expressible; it fires once. A consumer fault fails a destination's next `times` receipts.

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
}

impl Faults {
    pub fn arm_provider(&self, fault: ProviderFault) {
        let key = (fault.operation.clone(), fault.call);
        self.provider.lock().expect("faults lock").insert(key, fault);
    }

    pub fn arm_consumer(&self, fault: ConsumerFault) {
        self.consumer.lock().expect("faults lock").insert(fault.destination.clone(), fault);
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
