//! The services of one run once started: where the worker finds them, word of one that exits on
//! its own, and the stop at the end of the run (SIGKILL to each group and token, then reaped, under
//! a deadline). Dropped without a stop (an error, a panic), every group is still killed.

use super::proxy::{Opener, Proxy};
use super::spawn::{Spawned, data_dir, last_lines, spawn, spawn_on};
use super::traced::{Lost, Traced};
use super::{Ports, Service, ServiceName, Services};
use crate::run::incarnation::{describe_status, kill_group_and_token};
use crate::scenario::ServiceFaultAction;
use nix::unistd::Pid;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// How long the stop waits for the killed services to be reaped: SIGKILL cannot be ignored, so
/// only a process stuck in the kernel (a dead NFS mount) takes longer.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

/// How long a `restart` service fault's SIGTERM has before the SIGKILL: an orderly stop of a
/// server (Temporal's dev server, Postgres's fast shutdown) takes a second or two.
const TERM_DEADLINE: Duration = Duration::from_secs(10);

/// A window's hold on one service (a `freeze` or an `unreachable`), ended by [`Hold::end`] from
/// any task, once.
#[derive(Clone)]
pub enum Hold {
    /// Its process group, SIGSTOPped.
    Frozen(Pid),
    /// Its proxy, cut.
    Cut(Opener),
}

impl Hold {
    /// SIGCONT to the group (a group that has died since, in a kill of its own, is no error), or
    /// the proxy open again.
    pub fn end(&self) {
        match self {
            Hold::Frozen(pgid) => {
                let _ = nix::sys::signal::killpg(*pgid, nix::sys::signal::Signal::SIGCONT);
            }
            Hold::Cut(opener) => opener.open(),
        }
    }
}

/// A service a `[[service_fault]]` took down, to be started again.
#[derive(Debug, Clone)]
pub struct TakenDown {
    index: usize,
    /// How its process ended, in words.
    pub status: String,
}

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

/// Machine-crash mode (`--crash machine`): every service runs under `tracer`, its socket in
/// `sockets` (the run's sockets' directory), so that a power loss can take it too.
#[derive(Debug, Clone)]
pub struct Machine {
    pub tracer: PathBuf,
    pub sockets: PathBuf,
}

/// A service a power loss took: reaped, its data dir rebuilt, to be started again
/// ([`Running::start_again`] with `down`).
#[derive(Debug, Clone)]
pub struct PowerLost {
    pub name: String,
    /// How its process ended (the SIGKILL) is `down.status`.
    pub down: TakenDown,
    pub lost: Lost,
}

/// What the stop at the end of a run found and did.
#[derive(Debug, Default)]
pub struct Stop {
    /// Services that had exited on their own, not told by [`Running::exited`] yet.
    pub exits: Vec<ServiceExit>,
    /// Services the stop killed and reaped.
    pub stopped: Vec<String>,
    /// Services not reaped, or not gone (every process of their group and token), by the stop's
    /// deadline, said in words (`None`: every one was).
    pub unreaped: Option<String>,
}

struct Started {
    /// As declared, to start it again after a `[[service_fault]]`.
    service: Service,
    name: ServiceName,
    ports: Ports,
    waited: Duration,
    pgid: Pid,
    token: String,
    log: PathBuf,
    /// Its exit status, in words, once its process was reaped.
    ended: Option<String>,
    /// Under the tracer, in machine-crash mode.
    traced: Option<Traced>,
}

/// The started services of a run (none, for a runtime without services).
#[derive(Default)]
pub struct Running {
    started: Vec<Started>,
    /// Each service's reaper task says here which service exited, and how.
    exits: Option<UnboundedReceiver<(usize, String)>>,
    sender: Option<tokio::sync::mpsc::UnboundedSender<(usize, String)>>,
    /// Exits of other services received while a restart waited for its own: told by `exited`.
    others: VecDeque<(usize, String)>,
    /// Each service's proxy, by the same index: the worker's way to it (`unreachable` cuts it).
    proxies: Vec<Proxy>,
    run_dir: PathBuf,
    logs: PathBuf,
}

impl Running {
    /// Starts `services` one after the other, each ready before the next starts (a later one may
    /// need an earlier one). On an error, those started are in the returned `Running`, to be
    /// stopped; the error names the service and what it waited for.
    /// With `machine`, each runs under the tracer, its data dir's power-loss model starting empty.
    pub async fn start(
        services: &Services,
        run_dir: &Path,
        logs: &Path,
        machine: Option<&Machine>,
    ) -> (Running, Result<(), String>) {
        let mut running = Running::default();
        (running.run_dir, running.logs) = (run_dir.to_owned(), logs.to_owned());
        for (index, service) in services.list.iter().enumerate() {
            let traced = match machine.map(|m| traced(m, index, run_dir, &service.name)).transpose() {
                Ok(traced) => traced,
                Err(message) => return (running, Err(format!("service `{}`: {message}", service.name))),
            };
            match spawn(service, run_dir, logs, traced.as_ref()).await {
                Ok(spawned) => {
                    let proxy = Proxy::start(spawned.ports.main);
                    running.watch(service.clone(), spawned, None, traced);
                    match proxy {
                        Ok(proxy) => running.proxies.push(proxy),
                        Err(e) => {
                            let why =
                                format!("service `{}`: no proxy for the worker to reach it by: {e}", service.name);
                            return (running, Err(why));
                        }
                    }
                }
                Err(message) => return (running, Err(format!("service `{}` {message}", service.name))),
            }
        }
        (running, Ok(()))
    }

    /// Keeps `spawned`, reaped by a task of its own that says when it exits: a new service, or
    /// (`again`) the one at that index started again.
    fn watch(&mut self, service: Service, spawned: Spawned, again: Option<usize>, traced: Option<Traced>) {
        let Spawned { name, ports, pgid, token, mut child, log, waited } = spawned;
        let index = again.unwrap_or(self.started.len());
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
        let started = Started { service, name, ports, waited, pgid, token, log, ended: None, traced };
        match again {
            Some(index) => self.started[index] = started,
            None => self.started.push(started),
        }
    }

    /// A `[[service_fault]]`'s first half: takes the service named `name` down (`action`) and
    /// waits until it is reaped. An error says what failed: no such service, one that had exited
    /// already, one that would not die.
    pub async fn take_down(&mut self, name: &str, action: ServiceFaultAction) -> Result<TakenDown, String> {
        let Some(index) = self.started.iter().position(|s| s.name.as_str() == name) else {
            let names: Vec<String> = self.started.iter().map(|s| s.name.to_string()).collect();
            return Err(format!("no service `{name}` to {}: the services are {names:?}", action.name()));
        };
        if let Some(status) = &self.started[index].ended {
            return Err(format!(
                "service `{name}` had exited ({status}) before the harness took it down (a [[service_fault]] or a power loss)"
            ));
        }
        let (pgid, token) = (self.started[index].pgid, self.started[index].token.clone());
        if action == ServiceFaultAction::Restart {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGTERM);
            if let Some(status) = self.reaped(index, TERM_DEADLINE).await {
                // What it started may outlive it (a server's helpers): the group and token go too.
                kill_group_and_token(pgid, &token);
                return self.gone(index, status).await;
            }
        }
        kill_group_and_token(pgid, &token);
        match self.reaped(index, REAP_DEADLINE).await {
            Some(status) => self.gone(index, status).await,
            None => Err(format!("service `{name}` was not reaped within {REAP_DEADLINE:?} of its SIGKILL")),
        }
    }

    /// Service `index`, reaped: down once every process of its group and token has exited too (a
    /// traced server outlives its tracer for a moment, its ports still bound: `run::gone`).
    async fn gone(&mut self, index: usize, status: String) -> Result<TakenDown, String> {
        self.all_of_it_gone(index).await?;
        Ok(self.down(index, status))
    }

    /// Waits until every process of service `index`'s group and token has exited, its first one
    /// reaped already: what it started outside its own children dies a moment later.
    async fn all_of_it_gone(&self, index: usize) -> Result<(), String> {
        let s = &self.started[index];
        crate::run::gone::gone_within(s.pgid, &s.token, REAP_DEADLINE)
            .await
            .map_err(|why| format!("service `{}` was reaped, but not all of it died: {why}", s.name))
    }

    fn down(&mut self, index: usize, status: String) -> TakenDown {
        self.started[index].ended = Some(status.clone());
        TakenDown { index, status }
    }

    /// Waits up to `deadline` for service `index`'s reaper to say it exited; other services'
    /// exits meanwhile are kept for [`Running::exited`].
    async fn reaped(&mut self, index: usize, deadline: Duration) -> Option<String> {
        let exits = self.exits.as_mut()?;
        let others = &mut self.others;
        tokio::time::timeout(deadline, async {
            while let Some((i, status)) = exits.recv().await {
                if i == index {
                    return Some(status);
                }
                others.push_back((i, status));
            }
            None
        })
        .await
        .ok()
        .flatten()
    }

    /// A `[[service_fault]]`'s second half: the service taken down started again on the same
    /// data dir and ports, ready (or why not).
    pub async fn start_again(&mut self, down: &TakenDown) -> Result<ServiceStart, String> {
        let (service, ports) = (self.started[down.index].service.clone(), self.started[down.index].ports.clone());
        let port = ports.main;
        let traced = self.started[down.index].traced.take();
        traced.iter().for_each(Traced::restarting);
        let spawned = spawn_on(&service, &self.run_dir, &self.logs, ports, traced.as_ref())
            .await
            .map_err(|m| format!("service `{}` did not come back on its data dir and port: {m}", service.name))?;
        let start = ServiceStart { name: service.name.to_string(), port, waited: spawned.waited };
        self.watch(service, spawned, Some(down.index), traced);
        Ok(start)
    }

    /// Machine-crash mode, as the worker is killed: the power goes for every service at once.
    /// Nothing a service syncs from now on is recorded (`Traced::cut`), and its group is
    /// SIGKILLed; [`Running::lose_power`] reaps it. Nothing, for services not traced.
    pub fn cut_power(&mut self) {
        for s in self.started.iter_mut().filter(|s| s.ended.is_none()) {
            if let Some(traced) = s.traced.as_mut() {
                traced.cut();
                kill_group_and_token(s.pgid, &s.token);
            }
        }
    }

    /// After [`Running::cut_power`] and before the worker's restart: every traced service reaped
    /// and its data dir rebuilt to what it had synced, in the order declared; each is then to be
    /// started again ([`Running::start_again`]) before the worker. An error names the service
    /// that would not die or whose data dir could not be rebuilt.
    pub async fn lose_power(&mut self) -> Result<Vec<PowerLost>, String> {
        let traced: Vec<usize> = (0..self.started.len()).filter(|&i| self.started[i].traced.is_some()).collect();
        let mut lost_power = Vec::new();
        for index in traced {
            let name = self.started[index].name.to_string();
            let down = self.take_down(&name, ServiceFaultAction::Kill).await?;
            let model = self.started[index].traced.as_mut().expect("traced services only");
            let lost = model.restore().map_err(|m| format!("service `{name}`: {m}"))?;
            lost_power.push(PowerLost { name, down, lost });
        }
        Ok(lost_power)
    }

    pub fn started(&self) -> Vec<ServiceStart> {
        self.started
            .iter()
            .map(|s| ServiceStart { name: s.name.to_string(), port: s.ports.main, waited: s.waited })
            .collect()
    }

    /// What every incarnation of the worker is told of the services (CONTRACT.md section 2):
    /// `KILLPOINT_SERVICE_<NAME>_ADDR` (`127.0.0.1:PORT`) and `KILLPOINT_SERVICE_<NAME>_PORT`,
    /// the port of the harness's proxy to it, which an `unreachable` cuts; and for each port a
    /// service declared, `KILLPOINT_SERVICE_<NAME>_<PORT>_ADDR` and `_PORT`, the service's own
    /// (not proxied: an `unreachable` cuts the service's own port only).
    pub fn worker_env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        for (s, proxy) in self.started.iter().zip(&self.proxies) {
            env.push((s.name.variable("ADDR"), format!("127.0.0.1:{}", proxy.port())));
            env.push((s.name.variable("PORT"), proxy.port().to_string()));
            for (named, port) in &s.ports.named {
                env.push((s.name.port_variable(named, "ADDR"), format!("127.0.0.1:{port}")));
                env.push((s.name.port_variable(named, "PORT"), port.to_string()));
            }
        }
        env
    }

    /// The names of the services, in the order declared.
    pub fn names(&self) -> Vec<String> {
        self.started.iter().map(|s| s.name.to_string()).collect()
    }

    /// A window's start on service `name` (`freeze`: SIGSTOP to its process group; `unreachable`:
    /// its proxy cut), with the [`Hold`] that ends it. An error says what failed: no such service,
    /// one that had exited, a signal the system refused.
    pub fn hold(&mut self, name: &str, action: ServiceFaultAction) -> Result<Hold, String> {
        let Some(index) = self.started.iter().position(|s| s.name.as_str() == name) else {
            return Err(format!("no service `{name}` to {}: the services are {:?}", action.name(), self.names()));
        };
        if let Some(status) = &self.started[index].ended {
            return Err(format!("service `{name}` had exited ({status}) before its [[service_fault]]"));
        }
        match action {
            ServiceFaultAction::Freeze => {
                let pgid = self.started[index].pgid;
                nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGSTOP)
                    .map_err(|e| format!("cannot SIGSTOP service `{name}`'s process group {pgid}: {e}"))?;
                Ok(Hold::Frozen(pgid))
            }
            ServiceFaultAction::Unreachable => {
                self.proxies[index].cut();
                Ok(Hold::Cut(self.proxies[index].opener()))
            }
            ServiceFaultAction::Kill | ServiceFaultAction::Restart => {
                Err(format!("a `{}` is no window: it takes service `{name}` down", action.name()))
            }
        }
    }

    /// The next service to exit on its own; never, if none does (or there are none).
    pub async fn exited(&mut self) -> ServiceExit {
        if let Some((index, status)) = self.others.pop_front() {
            return self.ended(index, status);
        }
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
        while let Some((index, status)) = self.others.pop_front() {
            stop.exits.push(self.ended(index, status));
        }
        while let Some((index, status)) = self.exits.as_mut().and_then(|e| e.try_recv().ok()) {
            stop.exits.push(self.ended(index, status));
        }
        let mut killed = Vec::new();
        for (index, s) in self.started.iter().enumerate().filter(|(_, s)| s.ended.is_none()) {
            kill_group_and_token(s.pgid, &s.token);
            stop.stopped.push(s.name.to_string());
            killed.push(index);
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
            return stop;
        }
        // Reaped is not gone: Postgres in a PID namespace of its own (its processes reparented,
        // not ours to reap) was seen alive after the run had returned, under load. Waited for as
        // a service taken down mid-run is.
        let mut not_gone = Vec::new();
        for index in killed {
            if let Err(why) = self.all_of_it_gone(index).await {
                not_gone.push(why);
            }
        }
        if !not_gone.is_empty() {
            stop.unreaped = Some(not_gone.join("; "));
        }
        stop
    }
}

/// Service `index`'s tracing in machine-crash mode: a socket of its own (named by its index, as
/// short as the worker's: the sockets' directory is checked to fit the longest), its data dir made
/// empty as the power-loss model's baseline.
fn traced(machine: &Machine, index: usize, run_dir: &Path, name: &ServiceName) -> Result<Traced, String> {
    let data = data_dir(run_dir, name)?;
    Traced::new(machine.tracer.clone(), machine.sockets.join(format!("svc-{index}.sock")), &data)
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
