//! A scenario's `[[service_fault]]`s: what the harness does to a service beside the worker (a
//! server, `--services`) while the worker lives on (CONTRACT.md section 2, "Services"). Read by
//! `parse/service_fault.rs`, fired by the run's driver.

use super::{Anchor, Scenario, first, is_first};
use crate::model::boundary::Boundary;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A `[[service_fault]]`: when `operation` reaches `at` for the `occurrence`-th time (at a
/// delivery boundary, its delivery to `destination`), the harness acts on the service named
/// `service` (`*`: every declared service, in the order declared) while the worker lives on: takes
/// it down and starts it again on the same data dir and port (`kill`, `restart`), or, for
/// `seconds`, stops it (`freeze`) or cuts the worker off from it (`unreachable`). At a probe's
/// boundary the worker is held there while a service goes down and comes back; a window
/// (`freeze`, `unreachable`) opens there and the worker is answered at once, to meet it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceFault {
    pub service: String,
    pub at: Boundary,
    pub operation: String,
    #[serde(default = "first", skip_serializing_if = "is_first")]
    pub occurrence: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    #[serde(default, skip_serializing_if = "ServiceFaultAction::is_kill")]
    pub action: ServiceFaultAction,
    /// How long a `freeze` or `unreachable` lasts (checked: only there, and there always); with
    /// `until`, the longest it lasts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// A `freeze` or `unreachable` ends sooner when this world event happens: an operation
    /// reaching a boundary the probe announces, for the `occurrence`-th time in the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Anchor>,
}

/// `service = "*"`: every declared service, in the order the services file declares them.
pub const EVERY_SERVICE: &str = "*";

/// What a `[[service_fault]]` does to its service: `kill` is a crash (SIGKILL to its process
/// group: what it had not made durable is gone), `restart` an orderly stop (SIGTERM, then SIGKILL
/// if it has not exited within 10 s), each followed by a start on the same data dir and port;
/// `freeze` SIGSTOPs its process group for the fault's `seconds`, then SIGCONTs it; `unreachable`
/// cuts the worker's connections to it for the fault's `seconds` (the service runs on).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceFaultAction {
    #[default]
    Kill,
    Restart,
    Freeze,
    Unreachable,
}

impl ServiceFaultAction {
    fn is_kill(&self) -> bool {
        *self == ServiceFaultAction::Kill
    }

    pub fn name(self) -> &'static str {
        match self {
            ServiceFaultAction::Kill => "kill",
            ServiceFaultAction::Restart => "restart",
            ServiceFaultAction::Freeze => "freeze",
            ServiceFaultAction::Unreachable => "unreachable",
        }
    }

    /// Whether the fault lasts a stated time (a window) rather than ending in a new start.
    pub fn is_window(self) -> bool {
        matches!(self, ServiceFaultAction::Freeze | ServiceFaultAction::Unreachable)
    }
}

impl ServiceFault {
    /// `kill kv at after_dispatch #1 of charge`, `freeze * for 2s at after_delivery_send #1 of
    /// charge -> ledger`.
    pub fn describe(&self) -> String {
        let until = self.until.as_ref().map(|a| format!(" or until {a}")).unwrap_or_default();
        let window = self.window().map(|d| format!(" for {d:?}{until}")).unwrap_or_default();
        let to = self.destination.as_deref().map(|d| format!(" -> {d}")).unwrap_or_default();
        format!(
            "{} {}{window} at {} #{} of {}{to}",
            self.action.name(),
            self.service,
            self.at,
            self.occurrence,
            self.operation
        )
    }

    /// How long a `freeze` or `unreachable` lasts; `None` for a `kill` or a `restart`.
    pub fn window(&self) -> Option<Duration> {
        match self.action.is_window() {
            true => self.seconds.map(Duration::from_secs_f64),
            false => None,
        }
    }

    /// The services it acts on, of those declared (`declared`, in their order).
    pub fn targets<'n>(&self, declared: &[&'n str]) -> Vec<&'n str> {
        declared.iter().copied().filter(|name| self.service == EVERY_SERVICE || *name == self.service).collect()
    }
}

impl Scenario {
    /// Whether the scenario means anything only with services declared: it says so, or a
    /// `[[service_fault]]` names every service (`*`). One that names a service of its own needs
    /// that one, which is the services file's error when it is missing.
    pub fn needs_services(&self) -> bool {
        self.needs_services || self.service_faults.iter().any(|f| f.service == EVERY_SERVICE)
    }
}
