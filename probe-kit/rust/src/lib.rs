//! The contract's plumbing for a Rust runtime, in one crate with no dependencies: read the
//! environment killpoint sets (CONTRACT.md §2), connect the boundary probe (§7), print the ready
//! line, and announce each boundary in one line.
//!
//! ```no_run
//! # fn serve(_: std::net::TcpListener) {}
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let env = killpoint_probe::Env::from_env()?; // checks KILLPOINT_CONTRACT, parses the rest
//! killpoint_probe::connect(env.probe_socket.as_deref())?; // before the ready line (§2-7)
//! let listener = std::net::TcpListener::bind(env.listen)?;
//! killpoint_probe::ready(listener.local_addr()?)?; // KILLPOINT_READY {...}; boundaries armed
//! # let (op_id, attempt) = ("op-1", 1);
//! killpoint_probe::boundary!("before_dispatch", op_id, attempt);
//! # serve(listener);
//! # Ok(())
//! # }
//! ```
//!
//! Off (no `KILLPOINT_PROBE_SOCKET`, or before [`ready`]), a `boundary!` is one relaxed atomic
//! load and a branch; its arguments are not even evaluated (as fail-rs does it). On, it writes the
//! announcement and blocks the calling thread until the harness answers `resume` — or kills the
//! process right there, which is the point. Announcements from several threads or tasks are
//! serialised (one message, one answer, then the next: §7-2). If the harness goes away, the
//! process exits with status 70 (§7-3), noticed even while the runtime is idle.
//!
//! Blocking a thread is what a kill point is for, but under tokio's multi-threaded runtime the
//! `tokio` feature hands the thread's other tasks to another worker first
//! (`block_in_place`), so a runtime's API keeps answering while one task waits on the harness.

use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The contract version this kit speaks.
pub const CONTRACT: &str = "killpoint-contract/9";

/// Exit status when the harness is gone or misbehaves (EX_SOFTWARE).
pub const EXIT_PROBE_LOST: i32 = 70;

/// The boundaries a runtime announces (CONTRACT.md §7). The contract names two more, which the
/// harness reaches from outside: `after_submit` (the `202` arrived at the harness) and
/// `after_dispatch` (the provider holds its answer); announcing those is a compile error in
/// [`boundary!`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// Policy allowed a new attempt; `DISPATCHED` is not yet written; the provider not yet called.
    BeforeDispatch,
    /// A success (an answer or a lookup) is in memory; nothing about it is written yet.
    AfterProviderSuccess,
    /// `SUCCEEDED` and the outbox are committed; no delivery has been sent.
    AfterResultWrite,
    /// A consumer acknowledged this send; `ACKED` is not yet written.
    AfterDeliverySend,
    /// A policy refusal and its audit entry are committed.
    AfterPolicyRevocation,
}

impl Boundary {
    pub const ALL: [Boundary; 5] = [
        Boundary::BeforeDispatch,
        Boundary::AfterProviderSuccess,
        Boundary::AfterResultWrite,
        Boundary::AfterDeliverySend,
        Boundary::AfterPolicyRevocation,
    ];

    /// The name on the wire and in scenarios.
    pub const fn as_str(self) -> &'static str {
        match self {
            Boundary::BeforeDispatch => "before_dispatch",
            Boundary::AfterProviderSuccess => "after_provider_success",
            Boundary::AfterResultWrite => "after_result_write",
            Boundary::AfterDeliverySend => "after_delivery_send",
            Boundary::AfterPolicyRevocation => "after_policy_revocation",
        }
    }
}

impl fmt::Display for Boundary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Announces a boundary: `boundary!(name, operation_id, attempt)`, or for the delivery boundary
/// `boundary!("after_delivery_send", operation_id, send, destination)`. `operation_id` and
/// `destination` are anything that is `AsRef<str>`; `attempt` is a `u32` (the provider attempt, or
/// the delivery's send number). The name is checked at compile time.
///
/// Off, this is one relaxed atomic load; the arguments are not evaluated.
///
/// What the contract forbids does not compile: a boundary the runtime does not announce,
///
/// ```compile_fail
/// killpoint_probe::boundary!("after_dispatch", "op-1", 1);
/// ```
///
/// an announcement without its attempt,
///
/// ```compile_fail
/// killpoint_probe::boundary!("after_provider_success", "op-1");
/// ```
///
/// a delivery boundary without its destination, or a destination on any other boundary.
///
/// ```compile_fail
/// killpoint_probe::boundary!("after_delivery_send", "op-1", 1);
/// ```
///
/// ```compile_fail
/// killpoint_probe::boundary!("before_dispatch", "op-1", 1, "ledger");
/// ```
#[macro_export]
macro_rules! boundary {
    ("before_dispatch", $op:expr, $attempt:expr $(,)?) => {
        $crate::__announce!($crate::Boundary::BeforeDispatch, $op, $attempt)
    };
    ("after_provider_success", $op:expr, $attempt:expr $(,)?) => {
        $crate::__announce!($crate::Boundary::AfterProviderSuccess, $op, $attempt)
    };
    ("after_result_write", $op:expr, $attempt:expr $(,)?) => {
        $crate::__announce!($crate::Boundary::AfterResultWrite, $op, $attempt)
    };
    ("after_policy_revocation", $op:expr, $attempt:expr $(,)?) => {
        $crate::__announce!($crate::Boundary::AfterPolicyRevocation, $op, $attempt)
    };
    ("after_delivery_send", $op:expr, $send:expr, $destination:expr $(,)?) => {
        if $crate::armed() {
            $crate::announce(
                $crate::Boundary::AfterDeliverySend,
                ::core::convert::AsRef::<str>::as_ref(&$op),
                $send,
                ::core::option::Option::Some(::core::convert::AsRef::<str>::as_ref(&$destination)),
            )
        }
    };
    ("after_delivery_send", $($rest:tt)*) => {
        ::core::compile_error!(
            "`after_delivery_send` names the send and the destination: boundary!(\"after_delivery_send\", operation_id, send, destination) (CONTRACT.md §7)"
        )
    };
    ("after_submit", $($rest:tt)*) => {
        ::core::compile_error!("`after_submit` is reached by the harness when the 202 arrives; the runtime announces nothing there (CONTRACT.md §7)")
    };
    ("after_dispatch", $($rest:tt)*) => {
        ::core::compile_error!("`after_dispatch` is reached by the provider holding its answer; the runtime announces nothing there (CONTRACT.md §7)")
    };
    ($name:literal, $op:expr $(,)?) => {
        ::core::compile_error!(::core::concat!(
            "boundary!(", $name, ", operation_id) lacks the attempt: every announcement carries one, boundary!(", $name, ", operation_id, attempt) (CONTRACT.md §7)"
        ))
    };
    ($name:literal, $op:expr, $attempt:expr, $destination:expr $(,)?) => {
        ::core::compile_error!(::core::concat!(
            "only `after_delivery_send` names a destination, found one for ", $name, " (CONTRACT.md §7)"
        ))
    };
    ($name:literal $($rest:tt)*) => {
        ::core::compile_error!(::core::concat!(
            "unknown boundary ", $name, "; expected before_dispatch, after_provider_success, after_result_write, after_delivery_send or after_policy_revocation"
        ))
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __announce {
    ($boundary:expr, $op:expr, $attempt:expr) => {
        if $crate::armed() {
            $crate::announce(
                $boundary,
                ::core::convert::AsRef::<str>::as_ref(&$op),
                $attempt,
                ::core::option::Option::None,
            )
        }
    };
}

// ---- state -------------------------------------------------------------------------------------

/// No probe: every announcement is a no-op.
const OFF: u8 = 0;
/// Connected, ready line not printed yet: an announcement now breaks §2-8 and stops the process.
const CONNECTED: u8 = 1;
/// Ready line printed: announcements go to the harness.
const ARMED: u8 = 2;

/// The only thing the disabled path reads. Relaxed is enough: the connection it guards is behind
/// a `OnceLock`, which synchronises on its own.
static STATE: AtomicU8 = AtomicU8::new(OFF);
static PROBE: OnceLock<Mutex<Exchange>> = OnceLock::new();

struct Exchange {
    writer: UnixStream,
    /// Lines from the harness, read all the time by the reader thread.
    answers: Receiver<String>,
}

/// Whether announcements do anything. What `boundary!` checks first; inlined into the caller.
#[inline(always)]
pub fn armed() -> bool {
    STATE.load(Ordering::Relaxed) != OFF
}

/// Whether the probe is connected (what the ready line declares as `"probe"`).
pub fn connected() -> bool {
    PROBE.get().is_some()
}

/// Connects to the harness's probe socket, if there is one; call it before [`ready`] (§2-7).
/// `None` (certified without the probe) leaves every `boundary!` a no-op. Connecting twice is an
/// error: one connection for the whole life of the process.
pub fn connect(socket: Option<&Path>) -> Result<(), ProbeError> {
    let Some(path) = socket else { return Ok(()) };
    let stream = UnixStream::connect(path)
        .map_err(|source| ProbeError { what: format!("connecting to the probe socket {}", path.display()), source })?;
    let reader = stream
        .try_clone()
        .map_err(|source| ProbeError { what: "cloning the probe socket for its reader".into(), source })?;
    let (sender, answers) = sync_channel(1);
    if PROBE.set(Mutex::new(Exchange { writer: stream, answers })).is_err() {
        return Err(ProbeError {
            what: "connecting the probe a second time".into(),
            source: std::io::Error::other("the probe is connected once, for the whole life of the process"),
        });
    }
    std::thread::Builder::new()
        .name("killpoint-probe".into())
        .spawn(move || read_answers(reader, sender))
        .map_err(|source| ProbeError { what: "starting the probe reader thread".into(), source })?;
    STATE.store(CONNECTED, Ordering::Relaxed);
    Ok(())
}

/// Prints the ready line on stdout — `KILLPOINT_READY {"contract":…,"api":"http://…","probe":…}`
/// (§2-6) — and from then on sends announcements to the harness, if the probe is connected.
pub fn ready(api: SocketAddr) -> std::io::Result<()> {
    ready_declaring(api, Declares::default())
}

/// What a runtime declares in its ready line besides the probe: the contract's optional parts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declares {
    /// `GET /metrics` serves the monitoring signals (CONTRACT.md §11).
    pub metrics: bool,
}

/// [`ready`], declaring the optional parts the runtime implements.
pub fn ready_declaring(api: SocketAddr, declares: Declares) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", ready_line(api, connected(), declares))?;
    stdout.flush()?;
    if connected() {
        STATE.store(ARMED, Ordering::Relaxed);
    }
    Ok(())
}

/// The ready line, without its newline.
pub fn ready_line(api: SocketAddr, probe: bool, declares: Declares) -> String {
    let metrics = if declares.metrics { ",\"metrics\":true" } else { "" };
    format!(
        "KILLPOINT_READY {{\"contract\":{},\"api\":{},\"probe\":{probe}{metrics}}}",
        json_string(CONTRACT),
        json_string(&format!("http://{api}"))
    )
}

/// Announces `boundary` and returns once the harness says `resume`. What [`boundary!`] calls when
/// the probe is on; call it directly only where the boundary is chosen at run time.
///
/// Never returns if the harness answers anything but `resume` or the connection breaks: the
/// process exits. Without the harness nobody can observe or place the next crash, and the
/// contract says a runtime that lost its probe must stop.
#[cold]
#[inline(never)]
pub fn announce(boundary: Boundary, operation_id: &str, attempt: u32, destination: Option<&str>) {
    let Some(probe) = PROBE.get() else { return };
    let line = message(boundary, operation_id, attempt, destination);
    if STATE.load(Ordering::Relaxed) != ARMED {
        lost(&format!(
            "{line} was announced before the ready line; a runtime announces nothing before it (CONTRACT.md §2-8)"
        ));
    }
    blocking(|| {
        // Held until the answer is in: one message, one answer, then the next.
        let mut exchange = probe.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match exchange.answers.try_recv() {
            Ok(unasked) => lost(&format!("the harness sent {unasked} before being asked anything")),
            Err(TryRecvError::Disconnected) => lost("the probe reader stopped"),
            Err(TryRecvError::Empty) => {}
        }
        if let Err(error) = exchange.writer.write_all(format!("{line}\n").as_bytes()) {
            lost(&format!("writing {line}: {error}"));
        }
        match exchange.answers.recv() {
            Ok(answer) if is_resume(&answer) => {}
            Ok(answer) => lost(&format!("expected {{\"action\":\"resume\"}} after {line}, found {answer}")),
            Err(_) => lost("the probe reader stopped"),
        }
    });
}

/// Returns once no announcement is waiting for its answer (at once without the probe).
///
/// A runtime that works on operations concurrently calls it before it starts on one: an
/// operation's last announcement can follow the commit that settles it
/// (`after_policy_revocation`), so the next operation may already be submitted while that answer
/// is outstanding. Starting the new work only after the answer keeps one-at-a-time workloads in
/// the order they were always seen in.
pub fn quiet() {
    if let Some(probe) = PROBE.get()
        && STATE.load(Ordering::Relaxed) == ARMED
    {
        blocking(|| drop(probe.lock().unwrap_or_else(|poisoned| poisoned.into_inner())));
    }
}

/// The announcement line (without its newline).
pub fn message(boundary: Boundary, operation_id: &str, attempt: u32, destination: Option<&str>) -> String {
    let mut line =
        format!("{{\"boundary\":\"{boundary}\",\"operation_id\":{},\"attempt\":{attempt}", json_string(operation_id));
    if let Some(destination) = destination {
        line.push_str(&format!(",\"destination\":{}", json_string(destination)));
    }
    line.push('}');
    line
}

/// The harness's only answer, `{"action":"resume"}`, allowing JSON's insignificant whitespace.
fn is_resume(answer: &str) -> bool {
    let compact: String = answer.chars().filter(|c| !c.is_whitespace()).collect();
    compact == r#"{"action":"resume"}"#
}

#[cfg(feature = "tokio")]
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(not(feature = "tokio"))]
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// Reads the harness's lines for the whole life of the process. Reading all the time, not only
/// while waiting for an answer, is what notices a harness that went away while the runtime was
/// idle: the runtime exits then instead of outliving it.
fn read_answers(reader: UnixStream, answers: SyncSender<String>) {
    for line in BufReader::new(reader).lines() {
        match line {
            Ok(line) => {
                if answers.send(line).is_err() {
                    return;
                }
            }
            Err(error) => lost(&format!("reading from the harness: {error}")),
        }
    }
    lost("the harness closed the connection");
}

fn lost(why: &str) -> ! {
    eprintln!("probe: {why}; exiting");
    std::process::exit(EXIT_PROBE_LOST);
}

fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The probe could not be set up: what was being done, and the system's reason.
#[derive(Debug)]
pub struct ProbeError {
    what: String,
    source: std::io::Error,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.source)
    }
}

impl std::error::Error for ProbeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

// ---- the environment (§2) ----------------------------------------------------------------------

/// What the harness tells a runtime through its environment (CONTRACT.md §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// Where all durable state lives; the same for every incarnation.
    pub data_dir: PathBuf,
    /// The address to bind the API to (port 0: the OS chooses).
    pub listen: SocketAddr,
    /// Base URLs, without a trailing `/`.
    pub provider_url: String,
    pub consumers_url: String,
    pub policy_url: String,
    /// Which life of the runtime this is: the fencing token (§9), sent as `Killpoint-Incarnation`.
    pub incarnation: u32,
    /// `None` when the harness certifies without the probe.
    pub probe_socket: Option<PathBuf>,
    /// Sends of one delivery before it is dead-lettered.
    pub delivery_max_attempts: u32,
    /// Delay after the first failed send; later delays double.
    pub retry_base: Duration,
}

impl Env {
    /// Reads the process environment.
    pub fn from_env() -> Result<Env, EnvError> {
        Env::from_lookup(|name| std::env::var_os(name).map(|value| value.to_string_lossy().into_owned()))
    }

    /// Reads the variables through `lookup` (for tests, or a runtime that keeps its own copy).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Env, EnvError> {
        let get = |name: &'static str| lookup(name).filter(|value| !value.is_empty());
        let required = |name: &'static str, expected: &'static str| {
            get(name).ok_or(EnvError { variable: name, expected, found: None })
        };
        let contract = required("KILLPOINT_CONTRACT", "the contract version")?;
        if contract != CONTRACT {
            return Err(EnvError { variable: "KILLPOINT_CONTRACT", expected: CONTRACT, found: Some(contract) });
        }
        let listen_text = required("KILLPOINT_LISTEN", "an address to bind, like 127.0.0.1:0")?;
        let listen = listen_text.parse().map_err(|_| EnvError {
            variable: "KILLPOINT_LISTEN",
            expected: "an IP address and port like 127.0.0.1:0",
            found: Some(listen_text.clone()),
        })?;
        let url = |name: &'static str| {
            let value = required(name, "an http:// base URL")?;
            if !value.starts_with("http://") {
                return Err(EnvError { variable: name, expected: "an http:// base URL", found: Some(value) });
            }
            Ok(value.trim_end_matches('/').to_owned())
        };
        let number = |name: &'static str, default: u32| match get(name) {
            None => Ok(default),
            Some(value) => match value.parse::<u32>() {
                Ok(number) if number > 0 => Ok(number),
                _ => Err(EnvError { variable: name, expected: "a whole number above 0", found: Some(value) }),
            },
        };
        required("KILLPOINT_INCARNATION", "which life of the runtime this is: 1, 2, …")?;
        Ok(Env {
            data_dir: required("KILLPOINT_DATA_DIR", "a directory for durable state")?.into(),
            listen,
            provider_url: url("KILLPOINT_PROVIDER_URL")?,
            consumers_url: url("KILLPOINT_CONSUMERS_URL")?,
            policy_url: url("KILLPOINT_POLICY_URL")?,
            incarnation: number("KILLPOINT_INCARNATION", 1)?,
            probe_socket: get("KILLPOINT_PROBE_SOCKET").map(PathBuf::from),
            delivery_max_attempts: number("KILLPOINT_DELIVERY_MAX_ATTEMPTS", 5)?,
            retry_base: Duration::from_millis(number("KILLPOINT_RETRY_BASE_MS", 25)?.into()),
        })
    }
}

/// A variable of §2 is missing or malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    pub variable: &'static str,
    pub expected: &'static str,
    /// `None`: not set (or empty).
    pub found: Option<String>,
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.found {
            None => write!(f, "{} is not set; expected {} ({CONTRACT}, CONTRACT.md §2)", self.variable, self.expected),
            Some(found) => write!(f, "{} should be {}, found {}", self.variable, self.expected, json_string(found)),
        }
    }
}

impl std::error::Error for EnvError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_the_contract_s_json() {
        assert_eq!(
            message(Boundary::BeforeDispatch, "op-1", 1, None),
            r#"{"boundary":"before_dispatch","operation_id":"op-1","attempt":1}"#
        );
        assert_eq!(
            message(Boundary::AfterDeliverySend, "op\"1", 2, Some("ledger")),
            r#"{"boundary":"after_delivery_send","operation_id":"op\"1","attempt":2,"destination":"ledger"}"#
        );
        assert_eq!(
            ready_line("127.0.0.1:40555".parse().unwrap(), true, Declares::default()),
            r#"KILLPOINT_READY {"contract":"killpoint-contract/9","api":"http://127.0.0.1:40555","probe":true}"#
        );
        assert!(is_resume(r#"{ "action": "resume" }"#));
        assert!(!is_resume(r#"{"action":"kill"}"#));
    }

    #[test]
    fn off_the_macro_evaluates_nothing() {
        let mut evaluated = false;
        let mut op = || {
            evaluated = true;
            "op-1"
        };
        boundary!("after_provider_success", op(), 1);
        boundary!("after_delivery_send", op(), 1, "ledger");
        assert!(!evaluated, "the arguments of a disabled boundary! are evaluated");
    }

    #[test]
    fn the_environment_is_read_with_its_defaults_and_its_errors_name_the_variable() {
        let vars = [
            ("KILLPOINT_CONTRACT", "killpoint-contract/9"),
            ("KILLPOINT_DATA_DIR", "/tmp/data"),
            ("KILLPOINT_LISTEN", "127.0.0.1:0"),
            ("KILLPOINT_PROVIDER_URL", "http://127.0.0.1:1/provider/"),
            ("KILLPOINT_CONSUMERS_URL", "http://127.0.0.1:1/consumers"),
            ("KILLPOINT_POLICY_URL", "http://127.0.0.1:1/policy"),
            ("KILLPOINT_INCARNATION", "2"),
        ];
        let lookup = |name: &str| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string());
        let env = Env::from_lookup(lookup).unwrap();
        assert_eq!(env.provider_url, "http://127.0.0.1:1/provider");
        assert_eq!((env.incarnation, env.delivery_max_attempts, env.probe_socket), (2, 5, None));
        assert_eq!(env.retry_base, Duration::from_millis(25));

        let other =
            |name: &str| if name == "KILLPOINT_CONTRACT" { Some("killpoint-contract/2".into()) } else { lookup(name) };
        assert_eq!(
            Env::from_lookup(other).unwrap_err().to_string(),
            "KILLPOINT_CONTRACT should be killpoint-contract/9, found \"killpoint-contract/2\""
        );
        let missing = |name: &str| if name == "KILLPOINT_DATA_DIR" { None } else { lookup(name) };
        assert_eq!(
            Env::from_lookup(missing).unwrap_err().to_string(),
            "KILLPOINT_DATA_DIR is not set; expected a directory for durable state (killpoint-contract/9, CONTRACT.md §2)"
        );
    }
}
