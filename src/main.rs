//! killpoint's reference runtime: an agent runtime that survives being killed at any instant
//! without turning a crash into a duplicate side effect or a lost delivery.
//!
//! It implements `killpoint-contract/9` (CONTRACT.md): durable intent before dispatch, one stable
//! idempotency key per operation, reconciliation of unknown outcomes by lookup, a transactional
//! outbox for deliveries, and a policy check before every new attempt and every send.
//!
//! Start-up order matters: open the store and recover what the last incarnation left in flight,
//! connect the probe, bind the API, and only then print the ready line the harness waits for.

mod api;
mod backoff;
mod broken;
mod config;
mod consumers;
mod fence;
mod http;
mod metrics;
mod model;
mod model_client;
mod policy;
mod provider;
mod request_hash;
mod store;
mod worker;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use crate::broken::Broken;
use crate::config::{CONTRACT, Config};
use crate::store::Store;
use crate::worker::Worker;

/// Exit status for a command line that cannot be run (as in sysexits' EX_USAGE convention of
/// most tools: 2).
const EXIT_USAGE: u8 = 2;

/// What the command line asks for.
enum Command {
    Help,
    /// `--list-broken`: one `name<TAB>description` line per broken variant, for `killpoint list
    /// variants` and for checking a scenario's `[[catches]]` against the variants that exist.
    ListBroken,
    Run {
        broken: Option<Broken>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let command = match parse_args(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(message) => {
            eprintln!("killpoint-runtime: {message}\n\n{}", usage());
            return ExitCode::from(EXIT_USAGE);
        }
    };
    match command {
        Command::Help => {
            println!("{}", usage());
            ExitCode::SUCCESS
        }
        Command::ListBroken => {
            for broken in Broken::ALL {
                println!("{}\t{}", broken.name(), broken.description());
            }
            ExitCode::SUCCESS
        }
        Command::Run { broken } => match run(broken).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("killpoint-runtime: {error:#}");
                ExitCode::FAILURE
            }
        },
    }
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Command, String> {
    let mut broken = None;
    while let Some(arg) = args.next() {
        let name = match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--list-broken" => return Ok(Command::ListBroken),
            "--broken" => args.next().ok_or("--broken needs a variant name")?,
            other => match other.strip_prefix("--broken=") {
                Some(name) => name.to_owned(),
                None => return Err(format!("unexpected argument {other:?}")),
            },
        };
        if broken.is_some() {
            return Err("--broken can be given once".to_owned());
        }
        broken = Some(Broken::from_name(&name).ok_or_else(|| {
            let names: Vec<_> = Broken::ALL.iter().map(|broken| broken.name()).collect();
            format!("unknown broken variant {name:?}; expected one of: {}", names.join(", "))
        })?);
    }
    Ok(Command::Run { broken })
}

fn usage() -> String {
    let mut usage = format!(
        "usage: killpoint-runtime [--broken <variant>]\n\n\
         The reference runtime for {CONTRACT}. Configured by the KILLPOINT_* environment\n\
         variables of CONTRACT.md §2; prints a KILLPOINT_READY line on stdout when it serves.\n\n\
         --broken <variant>   run a deliberately broken variant, to see killpoint catch it:\n"
    );
    for broken in Broken::ALL {
        usage.push_str(&format!("    {:<20} {}\n", broken.name(), broken.description()));
    }
    usage.push_str("--list-broken        print each variant's name and description, tab-separated, and exit\n");
    usage.push_str("-h, --help           show this help");
    usage
}

async fn run(broken: Option<Broken>) -> Result<()> {
    let config = Config::from_env()?;
    if let Some(broken) = broken {
        eprintln!(
            "!!! BROKEN RUNTIME: --broken {broken} ({}). This is not the reference behaviour. !!!",
            broken.description()
        );
    }

    if broken == Some(Broken::RecreateDataDir) {
        // BROKEN: a missing data dir is made anew, and the runtime starts with empty state.
        std::fs::create_dir_all(&config.data_dir)?;
    }
    match broken {
        Some(Broken::CacheOutsideDataDir) => cache_outside(&config.data_dir)?,
        Some(Broken::PhoneHome) => phone_home(),
        _ => {}
    }
    let mut store = Store::open(&config.data_dir, config.incarnation)?;
    if broken == Some(Broken::FencedHangs) {
        crate::fence::HANG.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if broken == Some(Broken::IgnoresFence) {
        crate::fence::RESEND.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if broken == Some(Broken::NoStoreFence) {
        // BROKEN: the fence is raised but never checked: an outlived incarnation's writes land.
        store = store.unfenced();
    }
    if broken == Some(Broken::NoSync) {
        // BROKEN: commits stay in the page cache; a power loss takes what the 202 promised.
        store.unsynced()?;
    }
    match broken {
        Some(Broken::RandomKey) => store = store.drawing_keys(store::Keys::DrawnProvider),
        Some(Broken::RekeyedOutbox) => store = store.drawing_keys(store::Keys::DrawnDelivery),
        _ => {}
    }
    if let Some(signal) = &config.restored {
        // Before the ready line: from here on nothing is sent for an operation the lost host may
        // have sent without a lookup first, whatever happens to this incarnation.
        let outrun = store.mark_restored(signal)?;
        eprintln!(
            "killpoint-runtime: started on a restored backup ({signal}): {} operation(s) the lost host may have attempted, reconciled first",
            outrun.len()
        );
        for id in outrun {
            eprintln!("{id} restored ({signal}): the lost host may have attempted it; looked up first");
        }
    }
    let store = Arc::new(store);
    worker::recover(&store, broken)?;

    // Before the ready line, as the contract requires; without a socket every boundary is a no-op.
    killpoint_probe::connect(config.probe_socket.as_deref())?;

    let listener =
        TcpListener::bind(config.listen).await.with_context(|| format!("binding the API to {}", config.listen))?;
    let address = listener.local_addr()?;

    let wake = Arc::new(Notify::new());
    let api = api::router(Arc::clone(&store), Arc::clone(&wake), broken);
    let worker = Worker::new(&config, store, wake, broken);

    // The listener is bound, so connections are accepted (queued by the kernel) from now on.
    // Announcements are armed from here on: none may precede the ready line. `GET /metrics`
    // serves the monitoring signals (the contract's optional section 11).
    killpoint_probe::ready_declaring(address, killpoint_probe::Declares { metrics: true })?;
    eprintln!("killpoint-runtime: serving {CONTRACT} on http://{address}");

    let worker = tokio::spawn(worker.run());
    tokio::select! {
        served = axum::serve(listener, api) => {
            served.context("serving the API")?;
            anyhow::bail!("the API server stopped")
        }
        worked = worker => match worked.context("the worker panicked")? {
            Err(error) => Err(error.context("the worker stopped")),
        },
    }
}

/// BROKEN (`cache-outside-data-dir`): a directory beside the data dir, a file in it, at every start.
fn cache_outside(data_dir: &std::path::Path) -> Result<()> {
    let mut name = data_dir.as_os_str().to_owned();
    name.push("-cache");
    let cache = std::path::PathBuf::from(name);
    std::fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let started = cache.join("started");
    std::fs::write(&started, std::process::id().to_string()).with_context(|| format!("writing {}", started.display()))
}

/// BROKEN (`phone-home`): a socket connected outside the world. UDP: nothing is sent; whether
/// the system has a route there or not, the attempt is made (and its failure ignored).
fn phone_home() {
    if let Ok(socket) = std::net::UdpSocket::bind("0.0.0.0:0") {
        let _ = socket.connect("192.0.2.1:80");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|arg| arg.to_string()))
    }

    #[test]
    fn broken_variants_are_chosen_by_flag_only() {
        assert!(matches!(parse(&[]), Ok(Command::Run { broken: None })));
        assert!(matches!(parse(&["--broken", "split-outbox"]), Ok(Command::Run { broken: Some(Broken::SplitOutbox) })));
        assert!(matches!(parse(&["--broken=fresh-key"]), Ok(Command::Run { broken: Some(Broken::FreshKey) })));
        let error = parse(&["--broken", "nope"]).err().unwrap();
        assert!(error.contains("blind-retry") && error.contains("no-policy-recheck"));
        assert!(parse(&["--broken"]).is_err());
        assert!(parse(&["--frobnicate"]).is_err());
        assert!(matches!(parse(&["--help"]), Ok(Command::Help)));
        assert!(matches!(parse(&["--list-broken"]), Ok(Command::ListBroken)));
    }
}
