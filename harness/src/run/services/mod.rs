//! Services: processes that are part of the runtime under test but are not its worker — a
//! workflow server (Temporal, Restate), a database (Postgres under DBOS) — declared once for a
//! runtime (`--services FILE`, [`Services::load`]; CONTRACT.md section 2, "Services").
//!
//! The harness starts each before the first incarnation, in a process group of its own outside
//! the worker's, on a data dir of its own in the run's directory and loopback ports it picked
//! (below the kernel's ephemeral range: `ports`); waits until its declared readiness check
//! passes; tells every incarnation of the worker where it is; and kills and reaps it when the run
//! ends. In process-crash mode a kill of the worker never reaches a service: every fault of a
//! scenario is "the worker died, the server lived on". A service that exits while the run goes on
//! stops the run, said as such.
//!
//! In machine-crash mode (`--crash machine`) each service runs under `killpoint-tracer`, and a kill
//! of the worker is a power loss of the machine: every service is killed too, its data dir rebuilt
//! to what it synced, and started again before the worker (`traced`).
//!
//! `declare` reads the file, `ports` picks where a service binds, `spawn` starts one service and
//! waits for it, `running` holds the started ones (their exits, the worker's environment, the
//! faults' holds, the power loss, the stop), `traced` is one service's tracing and power-loss
//! model, `proxy` the worker's way to each (the harness's loopback proxy, which an `unreachable`
//! cuts).

mod declare;
mod ports;
mod proxy;
mod running;
mod spawn;
mod traced;

pub use declare::ServicesError;
pub use ports::Ports;
pub use running::{Hold, Machine, PowerLost, Running, ServiceExit, ServiceStart, Stop, TakenDown};
pub use traced::Lost;

use std::path::PathBuf;
use std::time::Duration;

/// The services a runtime is run with; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Services {
    /// The file they were declared in, for the command that reruns a case (`--services FILE`).
    pub file: Option<PathBuf>,
    pub list: Vec<Service>,
}

impl Services {
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// One declared service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub name: ServiceName,
    /// The program and its arguments, started in `dir`.
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The working directory: that of the file that declared it (relative paths in the command
    /// are the file's, not those of wherever killpoint was started).
    pub dir: PathBuf,
    pub ready: Ready,
    /// How long from its start it has for its readiness check to pass.
    pub ready_timeout: Duration,
    /// The ports it needs besides its own (`ports = ["admin", "node"]`): a server with an API,
    /// an admin API and a port between its nodes (Restate) binds each where the harness says.
    pub ports: Vec<PortName>,
}

/// The name of a port a service declared: like a service's name, it is part of environment
/// variables' names (`KILLPOINT_SERVICE_PORT_<NAME>`, `KILLPOINT_SERVICE_<SVC>_<NAME>_ADDR`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortName(String);

impl PortName {
    pub fn new(name: &str) -> Result<PortName, String> {
        crate::model::service_name(name)
            .map(|()| PortName(name.to_owned()))
            .map_err(|_| format!("expected a port name of lower-case letters, digits and `_`, starting with a letter, at most 32 characters; found `{name}`"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn upper(&self) -> String {
        self.0.to_ascii_uppercase()
    }
}

impl std::fmt::Display for PortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// When a service counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ready {
    /// A TCP connection to its port on 127.0.0.1 is accepted.
    Port,
    /// This command, run in the service's directory with the service's environment, exits 0.
    Command { program: String, args: Vec<String> },
}

impl Ready {
    /// What the harness waits for, in words, for messages.
    pub fn describe(&self, port: u16) -> String {
        match self {
            Ready::Port => format!("a TCP connection to 127.0.0.1:{port} to be accepted"),
            Ready::Command { program, args } => {
                let command: Vec<&str> =
                    std::iter::once(program.as_str()).chain(args.iter().map(String::as_str)).collect();
                format!("`{}` to exit 0", command.join(" "))
            }
        }
    }
}

/// A service's name: `[a-z][a-z0-9_]*`, at most 32 characters, so that it is a file name
/// (`logs/service-<name>.log`) and, upper-cased, part of an environment variable's name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceName(String);

impl ServiceName {
    pub fn new(name: &str) -> Result<ServiceName, String> {
        crate::model::service_name(name).map(|()| ServiceName(name.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The worker's variables for this service: `KILLPOINT_SERVICE_<NAME>_<what>`.
    pub fn variable(&self, what: &str) -> String {
        format!("KILLPOINT_SERVICE_{}_{what}", self.0.to_ascii_uppercase())
    }

    /// The worker's variables for port `port` of this service: `KILLPOINT_SERVICE_<NAME>_<PORT>_<what>`.
    pub fn port_variable(&self, port: &PortName, what: &str) -> String {
        self.variable(&format!("{}_{what}", port.upper()))
    }
}

impl std::fmt::Display for ServiceName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
