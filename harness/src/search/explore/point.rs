//! A crash point: one boundary occurrence of a run, where a kill can land, and a point as found in
//! a run (with its place in the run's order and the crash state a kill there leaves).

use crate::model::boundary::Boundary;
use crate::run::driver::Fingerprint;
use crate::scenario::{Action, Fault};
use std::fmt;

/// One boundary occurrence of a run: where a kill can land.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    pub at: Boundary,
    pub operation: String,
    /// The n-th time the operation reached this boundary (per destination for deliveries),
    /// counted across restarts, as a `[[fault]]`'s `occurrence` counts.
    pub occurrence: u32,
    pub destination: Option<String>,
}

impl Point {
    /// A kill here, as a scenario fault.
    pub fn kill(&self) -> Fault {
        Fault {
            at: self.at,
            operation: self.operation.clone(),
            occurrence: self.occurrence,
            attempt: None,
            destination: self.destination.clone(),
            effect: true,
            action: Action::Kill,
            delay_ms: 0,
            status: None,
            revoke: Vec::new(),
        }
    }

    /// The part of a trial name that names this point: `after_dispatch.charge.1`,
    /// `after_delivery_send.charge.ledger.2`.
    pub fn slug(&self) -> String {
        match &self.destination {
            Some(d) => format!("{}.{}.{d}.{}", self.at, self.operation, self.occurrence),
            None => format!("{}.{}.{}", self.at, self.operation, self.occurrence),
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` of `{}`", self.at, self.operation)?;
        if let Some(d) = &self.destination {
            write!(f, " to `{d}`")?;
        }
        write!(f, ", occurrence {}", self.occurrence)
    }
}

/// A point as found in a run: its place in the run's order and, for probe points taken with
/// fingerprints, the crash state a kill there leaves.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    pub(super) point: Point,
    pub(super) seq: u64,
    pub(super) fingerprint: Option<Fingerprint>,
}
