//! The signal the fake world sends the harness when a request reaches an armed kill point.
//!
//! Below the servers that send it (provider, consumers) and the world that hands out the
//! receiving end: it must import none of them, or they would reach each other again.

use serde::{Deserialize, Serialize};

/// The world reached an armed kill point: the harness kills the runtime now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillPoint {
    /// The ledger entry of the request at which the point was reached.
    pub seq: u64,
    /// The tag the harness armed the fault with.
    pub tag: u64,
    /// For the trace: "the provider holds the answer to call 1 of op-1".
    pub what: String,
}
