//! The services of one run once started: where the worker finds them, word of one that exits on
//! its own, and the stop at the end of the run (SIGKILL to each group and token, then reaped, under
//! a deadline). Dropped without a stop (an error, a panic), every group is still killed.

use super::spawn::{Spawned, last_lines, spawn};
use super::{ServiceName, Services};
use crate::run::incarnation::{describe_status, kill_group_and_token};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// How long the stop waits for the killed services to be reaped: SIGKILL cannot be ignored, so
/// only a process stuck in the kernel (a dead NFS mount) takes longer.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

/// A service that was started and became ready, for the run's timeline.
#[derive(Debug, Clone)]
pub struct ServiceStart {
    pub name: String,
    pub port: u16,
    /// From its spawn to its readiness check passing.
    pub waited: Duration,
}

/// A service that exited on its own, with its last words.
#[derive(Debug, Clone)]
pub struct ServiceExit {
    pub name: String,
    pub status: String,
    pub last_lines: String,
}

/// What the stop at the end of a run found and did.
#[derive(Debug, Default)]
pub struct Stop {
    /// Services that had exited on their own, not told by [`Running::exited`] yet.
    pub exits: Vec<ServiceExit>,
    /// Services the stop killed and reaped.
    pub stopped: Vec<String>,
    /// Services not reaped by the stop's deadline, said in words (`None`: every one was).
    pub unreaped: Option<String>,
}

struct Started {
    name: ServiceName,
    port: u16,
    waited: Duration,
    pgid: Pid,
    token: String,
    log: PathBuf,
    /// Its exit status, in words, once its process was reaped.
    ended: Option<String>,
}

/// The started services of a run (none, for a runtime without services).
#[derive(Default)]
pub struct Running {
    started: Vec<Started>,
    /// Each service's reaper task says here which service exited, and how.
    exits: Option<UnboundedReceiver<(usize, String)>>,
    sender: Option<tokio::sync::mpsc::UnboundedSender<(usize, String)>>,
}

impl Running {
    /// Starts `services` one after the other, each ready before the next starts (a later one may
    /// need an earlier one). On an error, those started are in the returned `Running`, to be
    /// stopped; the error names the service and what it waited for.
    pub async fn start(services: &Services, run_dir: &Path, logs: &Path) -> (Running, Result<(), String>) {
        let mut running = Running::default();
        for service in &services.list {
            match spawn(service, run_dir, logs).await {
                Ok(spawned) => running.watch(spawned),
                Err(message) => return (running, Err(format!("service `{}` {message}", service.name))),
            }
        }
        (running, Ok(()))
    }

    /// Keeps `spawned`, reaped by a task of its own that says when it exits.
    fn watch(&mut self, spawned: Spawned) {
        let Spawned { name, port, pgid, token, mut child, log, waited } = spawned;
        let index = self.started.len();
        let sender = self.sender.get_or_insert_with(|| {
            let (sender, receiver) = unbounded_channel();
            self.exits = Some(receiver);
            sender
        });
        let sender = sender.clone();
        tokio::spawn(async move {
            let status = describe_status(child.wait().await.ok());
            let _ = sender.send((index, status));
        });
        self.started.push(Started { name, port, waited, pgid, token, log, ended: None });
    }

    pub fn started(&self) -> Vec<ServiceStart> {
        self.started.iter().map(|s| ServiceStart { name: s.name.to_string(), port: s.port, waited: s.waited }).collect()
    }

    /// What every incarnation of the worker is told of the services (CONTRACT.md section 2):
    /// `KILLPOINT_SERVICE_<NAME>_ADDR` (`127.0.0.1:PORT`) and `KILLPOINT_SERVICE_<NAME>_PORT`.
    pub fn worker_env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        for s in &self.started {
            env.push((s.name.variable("ADDR"), format!("127.0.0.1:{}", s.port)));
            env.push((s.name.variable("PORT"), s.port.to_string()));
        }
        env
    }

    /// The next service to exit on its own; never, if none does (or there are none).
    pub async fn exited(&mut self) -> ServiceExit {
        let Some(exits) = self.exits.as_mut() else { return std::future::pending().await };
        match exits.recv().await {
            Some((index, status)) => self.ended(index, status),
            None => std::future::pending().await,
        }
    }

    fn ended(&mut self, index: usize, status: String) -> ServiceExit {
        let service = &mut self.started[index];
        service.ended = Some(status.clone());
        ServiceExit { name: service.name.to_string(), status, last_lines: last_lines(&service.log, 15) }
    }

    /// Kills every service still running and reaps it; says which had exited on their own.
    pub async fn stop(&mut self) -> Stop {
        let mut stop = Stop::default();
        // What exited before the stop exited on its own.
        while let Some((index, status)) = self.exits.as_mut().and_then(|e| e.try_recv().ok()) {
            stop.exits.push(self.ended(index, status));
        }
        for s in self.started.iter().filter(|s| s.ended.is_none()) {
            kill_group_and_token(s.pgid, &s.token);
            stop.stopped.push(s.name.to_string());
        }
        let reaped = tokio::time::timeout(REAP_DEADLINE, async {
            while self.started.iter().any(|s| s.ended.is_none()) {
                match self.exits.as_mut().map(|e| e.recv()) {
                    Some(next) => match next.await {
                        Some((index, status)) => self.started[index].ended = Some(status),
                        None => break,
                    },
                    None => break,
                }
            }
        })
        .await;
        if reaped.is_err() {
            let left: Vec<String> =
                self.started.iter().filter(|s| s.ended.is_none()).map(|s| s.name.to_string()).collect();
            stop.unreaped =
                Some(format!("service(s) {} not reaped within {REAP_DEADLINE:?} of their SIGKILL", left.join(", ")));
        }
        stop
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // On every path out (an error, a panic) the services die; their reaper tasks, or the
        // runtime's drop of them, reap.
        for s in self.started.iter().filter(|s| s.ended.is_none()) {
            kill_group_and_token(s.pgid, &s.token);
        }
    }
}
