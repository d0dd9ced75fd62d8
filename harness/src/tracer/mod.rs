//! Syscall-level crash points: the logic of `killpoint-tracer`, a small process that sits between
//! the harness and the runtime, like `strace`, and turns the runtime's durable writes and its
//! exchanges with the fake world into crash points the harness can kill at exactly.
//!
//! How it traces (Linux, x86_64 only):
//! - The tracer forks the program. The child sets PDEATHSIG and NO_NEW_PRIVS, waits until the
//!   tracer has `PTRACE_SEIZE`d it (a pipe, not a signal: a SIGSTOP would put it in a group-stop the
//!   tracer would then have to undo), installs a seccomp filter that stops only the calls in
//!   [`Call`] and then execs. A traced call with no tracer attached would fail with ENOSYS, so the
//!   order matters: attached first, filter second.
//! - `PTRACE_SEIZE` (not `TRACEME`) because the harness freezes runtimes with SIGSTOP/SIGCONT of
//!   the process group: only a seized tracee can sit in a group-stop (`PTRACE_LISTEN`) and still
//!   wake on SIGCONT. `TRACECLONE` follows every thread (tokio runtimes are multi-threaded).
//! - At a seccomp stop the call has not run: that is the `before` point. `PTRACE_SYSCALL` from
//!   there stops again at the call's exit, with its return value: the `after` point.
//! - Each point is one JSON line on `$KILLPOINT_TRACE_SOCKET`, and the tracee stays stopped until
//!   the harness answers `{"action":"resume"}` (the probe's protocol, CONTRACT.md section 7). The
//!   tracer handles one stop at a time, so points are announced one at a time; threads that are
//!   not stopped keep running meanwhile.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use serde::{Deserialize, Serialize};

/// The tracer's exit status when the system does not let it trace (no ptrace or no seccomp, as in
/// some containers): the harness falls back to the probe or black-box.
pub const NOT_PERMITTED_EXIT: i32 = 125;

/// Whether a point is just before the call runs or just after it returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Before,
    After,
}

impl When {
    pub fn name(self) -> &'static str {
        match self {
            When::Before => "before",
            When::After => "after",
        }
    }
}

/// What a crash point changes or exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// Bytes written to (or a size change of) a file under the data dir.
    Durable,
    /// fsync/fdatasync/sync_file_range of a file (or the directory) under the data dir.
    Sync,
    Rename,
    Unlink,
    /// A connection to the fake world being opened.
    Connect,
    /// Bytes sent to the fake world.
    Request,
    /// Bytes received from the fake world (announced `after` only, and only when bytes arrived: a
    /// kill before a receive is the same as a kill after whatever came before it).
    Answer,
}

impl PointKind {
    const ALL: [PointKind; 7] = [
        PointKind::Durable,
        PointKind::Sync,
        PointKind::Rename,
        PointKind::Unlink,
        PointKind::Connect,
        PointKind::Request,
        PointKind::Answer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PointKind::Durable => "durable",
            PointKind::Sync => "sync",
            PointKind::Rename => "rename",
            PointKind::Unlink => "unlink",
            PointKind::Connect => "connect",
            PointKind::Request => "request",
            PointKind::Answer => "answer",
        }
    }

    /// Durable-state points, as opposed to exchanges with the fake world.
    pub fn is_durable(self) -> bool {
        matches!(self, PointKind::Durable | PointKind::Sync | PointKind::Rename | PointKind::Unlink)
    }
}

/// Which part of the fake world a socket talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    Provider,
    Consumers,
    Policy,
    /// The fake world, which part not (yet) known: a `connect`, or bytes on a connection that
    /// has not named a path. The world serves all three under one address, told apart by path.
    World,
}

impl Peer {
    pub fn name(self) -> &'static str {
        match self {
            Peer::Provider => "provider",
            Peer::Consumers => "consumers",
            Peer::Policy => "policy",
            Peer::World => "world",
        }
    }
}

/// One of the fake world's URLs: where it listens and the path prefix that names the part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorldUrl {
    pub address: SocketAddr,
    pub path: String,
    pub peer: Peer,
}

/// One crash point, as sent to the harness (one JSON line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// 1, 2, 3… within one tracer's life (one incarnation).
    pub n: u64,
    pub when: When,
    /// The system call's name, as in `man 2`.
    pub call: String,
    pub kind: PointKind,
    /// The file under the data dir (for a rename: its old name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A rename's new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
    /// Bytes the call asks to write or send (`before`), or the buffer's size for a receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The call's return value (`after` only): bytes done, 0, or minus errno.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<i64>,
    pub tid: i32,
    /// On a request to the world: the request as far as its bytes so far tell (a body written
    /// in a later call completes it there). On the answer that completes an exchange: the
    /// request it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<HttpRequest>,
    /// On the receive that completes an answer (its last byte arrived): the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<HttpAnswer>,
}

/// An HTTP/1 request to the fake world, as the tracer read it from the runtime's sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// The `Idempotency-Key` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The JSON body, once all of it was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// A complete HTTP/1 answer from the fake world.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAnswer {
    pub status: u16,
    /// The body, when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

/// The bytes of one exchange on a world socket, as they pass: the request being sent, then its
/// answer arriving. HTTP/1 with keep-alive: a new request line starts the next exchange.
#[derive(Debug, Default)]
struct Exchange {
    request: Option<HttpRequest>,
    /// The request's body bytes so far, and how many its `Content-Length` promised.
    request_body: Vec<u8>,
    request_length: Option<usize>,
    answer: Vec<u8>,
}

/// The most of one message the tracer copies out of the runtime: the world's messages are small,
/// and a bigger one is simply not parsed.
const MESSAGE_LIMIT: usize = 64 * 1024;

/// Where `(head, body)` of an HTTP/1 message split, and its headers.
fn split_head(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((&bytes[..end], &bytes[end + 4..]))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

impl Exchange {
    /// Bytes the runtime sends on this socket. A request line starts a new exchange; anything else
    /// continues the current request's body.
    fn sent(&mut self, bytes: &[u8]) {
        if request_path(bytes).is_some() {
            *self = Exchange::default();
            let Some((head, body)) = split_head(bytes) else {
                // The head itself spans sends: only its request line is known.
                let line =
                    String::from_utf8_lossy(bytes.split(|&b| b == b'\r').next().unwrap_or_default()).into_owned();
                let mut words = line.split(' ');
                self.request = Some(HttpRequest {
                    method: words.next().unwrap_or_default().to_owned(),
                    path: words.next().unwrap_or_default().to_owned(),
                    ..HttpRequest::default()
                });
                return;
            };
            let head = String::from_utf8_lossy(head);
            let mut words = head.split("\r\n").next().unwrap_or_default().split(' ');
            self.request = Some(HttpRequest {
                method: words.next().unwrap_or_default().to_owned(),
                path: words.next().unwrap_or_default().to_owned(),
                key: header(&head, "idempotency-key").map(str::to_owned),
                body: None,
            });
            self.request_length = header(&head, "content-length").and_then(|v| v.parse().ok());
            self.request_body = body.to_vec();
        } else if self.request.is_some() && self.request_body.len() < MESSAGE_LIMIT {
            self.request_body.extend_from_slice(bytes);
        }
        if let Some(request) = &mut self.request
            && request.body.is_none()
            && self.request_length.is_some_and(|n| n > 0 && self.request_body.len() >= n)
        {
            request.body = serde_json::from_slice(&self.request_body).ok();
        }
    }

    /// Bytes received on this socket: the answer once its last byte arrived (by `Content-Length`,
    /// or the last chunk of a chunked one).
    fn received(&mut self, bytes: &[u8]) -> Option<(Option<HttpRequest>, HttpAnswer)> {
        if self.answer.len() + bytes.len() > MESSAGE_LIMIT {
            return None;
        }
        self.answer.extend_from_slice(bytes);
        let (head, body) = split_head(&self.answer)?;
        let head = String::from_utf8_lossy(head).into_owned();
        let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
        let body = if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            dechunk(body)?
        } else {
            let length: usize = header(&head, "content-length")?.parse().ok()?;
            body.get(..length)?.to_vec()
        };
        self.answer.clear();
        let answer = HttpAnswer { status, body: serde_json::from_slice(&body).ok() };
        Some((self.request.clone(), answer))
    }
}

/// A complete chunked body, joined; `None` until its last (empty) chunk arrived.
fn dechunk(mut bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = bytes.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&bytes[..end]).ok()?.split(';').next()?.trim(), 16).ok()?;
        bytes = &bytes[end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(bytes.get(..size)?);
        bytes = bytes.get(size + 2..)?;
    }
}

/// The calls the seccomp filter stops. Everything else runs untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Write,
    Pwrite64,
    Writev,
    Pwritev,
    Pwritev2,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Rename,
    Renameat,
    Renameat2,
    Unlink,
    Unlinkat,
    Ftruncate,
    Truncate,
    Fallocate,
    Connect,
    Sendto,
    Sendmsg,
    Read,
    Recvfrom,
    Recvmsg,
}

impl Call {
    pub const ALL: [Call; 22] = [
        Call::Write,
        Call::Pwrite64,
        Call::Writev,
        Call::Pwritev,
        Call::Pwritev2,
        Call::Fsync,
        Call::Fdatasync,
        Call::SyncFileRange,
        Call::Rename,
        Call::Renameat,
        Call::Renameat2,
        Call::Unlink,
        Call::Unlinkat,
        Call::Ftruncate,
        Call::Truncate,
        Call::Fallocate,
        Call::Connect,
        Call::Sendto,
        Call::Sendmsg,
        Call::Read,
        Call::Recvfrom,
        Call::Recvmsg,
    ];

    pub fn number(self) -> i64 {
        match self {
            Call::Write => libc::SYS_write,
            Call::Pwrite64 => libc::SYS_pwrite64,
            Call::Writev => libc::SYS_writev,
            Call::Pwritev => libc::SYS_pwritev,
            Call::Pwritev2 => libc::SYS_pwritev2,
            Call::Fsync => libc::SYS_fsync,
            Call::Fdatasync => libc::SYS_fdatasync,
            Call::SyncFileRange => libc::SYS_sync_file_range,
            Call::Rename => libc::SYS_rename,
            Call::Renameat => libc::SYS_renameat,
            Call::Renameat2 => libc::SYS_renameat2,
            Call::Unlink => libc::SYS_unlink,
            Call::Unlinkat => libc::SYS_unlinkat,
            Call::Ftruncate => libc::SYS_ftruncate,
            Call::Truncate => libc::SYS_truncate,
            Call::Fallocate => libc::SYS_fallocate,
            Call::Connect => libc::SYS_connect,
            Call::Sendto => libc::SYS_sendto,
            Call::Sendmsg => libc::SYS_sendmsg,
            Call::Read => libc::SYS_read,
            Call::Recvfrom => libc::SYS_recvfrom,
            Call::Recvmsg => libc::SYS_recvmsg,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Call::Write => "write",
            Call::Pwrite64 => "pwrite64",
            Call::Writev => "writev",
            Call::Pwritev => "pwritev",
            Call::Pwritev2 => "pwritev2",
            Call::Fsync => "fsync",
            Call::Fdatasync => "fdatasync",
            Call::SyncFileRange => "sync_file_range",
            Call::Rename => "rename",
            Call::Renameat => "renameat",
            Call::Renameat2 => "renameat2",
            Call::Unlink => "unlink",
            Call::Unlinkat => "unlinkat",
            Call::Ftruncate => "ftruncate",
            Call::Truncate => "truncate",
            Call::Fallocate => "fallocate",
            Call::Connect => "connect",
            Call::Sendto => "sendto",
            Call::Sendmsg => "sendmsg",
            Call::Read => "read",
            Call::Recvfrom => "recvfrom",
            Call::Recvmsg => "recvmsg",
        }
    }

    fn from_number(nr: i64) -> Option<Call> {
        Call::ALL.into_iter().find(|call| call.number() == nr)
    }
}

/// What the tracer needs to know, from the environment the harness gives the runtime.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `$KILLPOINT_DATA_DIR`, as given and canonical (fds resolve to canonical paths; path
    /// arguments are as the program wrote them).
    pub data_dirs: Vec<PathBuf>,
    /// The fake world's URLs.
    pub world: Vec<WorldUrl>,
    /// `$KILLPOINT_TRACE_SOCKET`; without it the tracer only counts points.
    pub socket: Option<PathBuf>,
    /// `$KILLPOINT_TRACE_LOG`: every point is also appended there as it happens (a SIGKILLed
    /// tracer prints no summary; this file is what a run leaves of its points).
    pub log: Option<PathBuf>,
}

impl Config {
    pub fn from_env() -> Config {
        let mut data_dirs = Vec::new();
        if let Some(dir) = std::env::var_os("KILLPOINT_DATA_DIR") {
            let dir = PathBuf::from(dir);
            if let Ok(canonical) = dir.canonicalize() {
                if canonical != dir {
                    data_dirs.push(canonical);
                }
            }
            data_dirs.insert(0, dir);
        }
        let world = [
            ("KILLPOINT_PROVIDER_URL", Peer::Provider),
            ("KILLPOINT_CONSUMERS_URL", Peer::Consumers),
            ("KILLPOINT_POLICY_URL", Peer::Policy),
        ]
        .into_iter()
        .filter_map(|(name, peer)| {
            let (address, path) = split_url(&std::env::var(name).ok()?)?;
            Some(WorldUrl { address, path, peer })
        })
        .collect();
        Config {
            data_dirs,
            world,
            socket: std::env::var_os("KILLPOINT_TRACE_SOCKET").map(PathBuf::from),
            log: std::env::var_os("KILLPOINT_TRACE_LOG").map(PathBuf::from),
        }
    }

    fn is_data(&self, path: &Path) -> bool {
        self.data_dirs.iter().any(|dir| path.starts_with(dir))
    }

    fn is_world(&self, address: SocketAddr) -> bool {
        self.world.iter().any(|url| url.address == address)
    }

    /// The part of the world at `address` that a request for `path` goes to (the longest
    /// matching prefix); without a path, the part only if it is the only one at that address.
    pub fn peer_of(&self, address: SocketAddr, path: Option<&str>) -> Option<Peer> {
        let mut here = self.world.iter().filter(|url| url.address == address);
        match path {
            Some(path) => here
                .filter(|url| path.starts_with(url.path.as_str()))
                .max_by_key(|url| url.path.len())
                .map(|url| url.peer),
            None => {
                let first = here.next()?;
                here.next().is_none().then_some(first.peer)
            }
        }
    }
}

/// `http://127.0.0.1:8080/provider` → (127.0.0.1:8080, "/provider"). Only IP literals: the
/// harness's world listens on loopback addresses, never on names.
pub fn split_url(url: &str) -> Option<(SocketAddr, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
    Some((authority.parse().ok()?, format!("/{}", path.trim_end_matches('/'))))
}

/// The path of an HTTP/1 request line at the start of `head` (`POST /provider/x HTTP/1.1`).
pub fn request_path(head: &[u8]) -> Option<&str> {
    let line = head.split(|&b| b == b'\r' || b == b'\n').next()?;
    let mut words = std::str::from_utf8(line).ok()?.split(' ');
    let method = words.next()?;
    let path = words.next()?;
    (method.bytes().all(|b| b.is_ascii_uppercase()) && path.starts_with('/')).then_some(path)
}

/// Why the tracer could not trace.
#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    /// The system refuses tracing (ptrace or seccomp): exit [`NOT_PERMITTED_EXIT`].
    #[error("{}", not_permitted_message(.what, .source))]
    NotPermitted { what: &'static str, source: std::io::Error },
    #[error("killpoint-tracer: cannot run {program}: {source}")]
    Program { program: String, source: std::io::Error },
    #[error("killpoint-tracer: trace socket {path}: {source}")]
    Socket { path: String, source: std::io::Error },
    #[error("killpoint-tracer: trace log {path}: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("killpoint-tracer: expected {{\"action\":\"resume\"}} from the harness, found {found}")]
    Answer { found: String },
    #[error("killpoint-tracer: {what}: {source}")]
    System { what: &'static str, source: std::io::Error },
}

impl TracerError {
    pub fn exit_code(&self) -> i32 {
        match self {
            TracerError::NotPermitted { .. } => NOT_PERMITTED_EXIT,
            TracerError::Program { .. } => 127,
            _ => 1,
        }
    }
}

/// The one line the tracer prints when it may not trace.
pub fn not_permitted_message(what: &str, source: &std::io::Error) -> String {
    format!(
        "killpoint-tracer: syscall points are not available here: {what} was refused ({source}); \
         use the probe or black-box instead"
    )
}

/// Counts of what the tracer saw, printed at exit when there is no trace socket.
#[derive(Debug, Default)]
pub struct Tally {
    /// Every seccomp stop, interesting or not: the cost of tracing.
    pub stops: u64,
    pub points: HashMap<PointKind, u64>,
}

impl Tally {
    pub fn summary(&self) -> String {
        let durable: u64 = self.points.iter().filter(|(k, _)| k.is_durable()).map(|(_, n)| n).sum();
        let network: u64 = self.points.iter().filter(|(k, _)| !k.is_durable()).map(|(_, n)| n).sum();
        let kinds: Vec<String> = PointKind::ALL
            .into_iter()
            .map(|kind| format!("{} {}", kind.name(), self.points.get(&kind).copied().unwrap_or(0)))
            .collect();
        format!(
            "killpoint-tracer: {} crash points ({durable} durable, {network} network: {}); {} syscall stops",
            durable + network,
            kinds.join(", "),
            self.stops
        )
    }
}

// ptrace and seccomp numbers the libc crate does not export for every target (x86_64 Linux ABI).
const PTRACE_EVENT_STOP: i32 = 128;
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
// Classic BPF opcodes are a class, a size or operation, and a source or mode, OR-ed together
// (linux/bpf_common.h); several parts are 0.
const BPF_LD: u16 = 0x00;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_JMP: u16 = 0x05;
const BPF_JEQ: u16 = 0x10;
const BPF_K: u16 = 0x00;
const BPF_RET: u16 = 0x06;
const BPF_LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const BPF_JMP_JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K;
const BPF_RET_K: u16 = BPF_RET | BPF_K;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

/// The filter: stop (SECCOMP_RET_TRACE) at the calls in [`Call::ALL`], allow the rest.
fn filter() -> Vec<libc::sock_filter> {
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let calls = Call::ALL;
    let mut program = vec![
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        // Another ABI (i386 via int 0x80) has other numbers: let it through untraced.
        op(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
    ];
    for (i, call) in calls.iter().enumerate() {
        // On a match, jump over the remaining tests and the ALLOW to the TRACE.
        let skip = (calls.len() - i) as u8;
        program.push(op(BPF_JMP_JEQ_K, skip, 0, call.number() as u32));
    }
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_TRACE));
    program
}

/// The runtime's pid, for the SIGTERM/SIGINT forwarder (a signal handler can only read statics).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, signal) };
    }
}

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// `execvp`'s search, done before fork so the child only has to exec.
fn resolve(program: &OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        return path.is_file().then(|| path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(path)).find(|p| p.is_file())
}

/// Runs `program args…` under the tracer and returns the exit status to exit with: the program's,
/// or 128 + the signal that killed it.
pub fn run(program: &OsStr, args: &[OsString], config: Config) -> Result<i32, TracerError> {
    let shown = program.to_string_lossy().into_owned();
    let not_found =
        || TracerError::Program { program: shown.clone(), source: std::io::Error::from_raw_os_error(libc::ENOENT) };
    let path = resolve(program).ok_or_else(not_found)?;
    let nul = |_| TracerError::Program {
        program: shown.clone(),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    };
    let exe = CString::new(path.as_os_str().as_bytes()).map_err(nul)?;
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(nul)?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let filter = filter();
    let fprog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut _ };

    let mut channel = match &config.socket {
        Some(path) => {
            let socket = |source| TracerError::Socket { path: path.display().to_string(), source };
            let stream = UnixStream::connect(path).map_err(socket)?;
            Some(Channel { reader: BufReader::new(stream.try_clone().map_err(socket)?), writer: stream })
        }
        None => None,
    };

    let log = match &config.log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| TracerError::Log { path: path.display().to_string(), source })?,
        ),
        None => None,
    };

    // `go`: the child waits on it until it is seized. `report`: the child's errno if seccomp is
    // refused (written before the filter is in place, so the write itself is not traced).
    let mut go = [0; 2];
    let mut report = [0; 2];
    // SAFETY: plain pipe creation into local arrays.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0
        || unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) } != 0
    {
        return Err(TracerError::System { what: "pipe2", source: errno() });
    }
    let parent = unsafe { libc::getpid() };
    // SAFETY: the tracer is single-threaded, and the child only makes raw system calls on data
    // prepared above until it execs or exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(TracerError::System { what: "fork", source: errno() });
    }
    if pid == 0 {
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The tracer may have died before PDEATHSIG was armed.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            libc::close(go[1]);
            libc::close(report[0]);
            let mut byte = 0u8;
            if libc::read(go[0], (&mut byte as *mut u8).cast(), 1) != 1 {
                libc::_exit(1);
            }
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const _) != 0
            {
                let code = *libc::__errno_location();
                libc::write(report[1], (&code as *const i32).cast(), 4);
                libc::_exit(NOT_PERMITTED_EXIT);
            }
            libc::execv(exe.as_ptr(), argv_ptrs.as_ptr());
            libc::_exit(127);
        }
    }
    unsafe {
        libc::close(go[0]);
        libc::close(report[1]);
    }
    let options = libc::PTRACE_O_TRACESECCOMP
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACESYSGOOD
        | libc::PTRACE_O_EXITKILL;
    // SAFETY: ptrace on our own child.
    if unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0, options as libc::c_long) } != 0 {
        let source = errno();
        unsafe { libc::kill(pid, libc::SIGKILL) };
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return Err(TracerError::NotPermitted { what: "ptrace (PTRACE_SEIZE)", source });
    }
    CHILD.store(pid, Ordering::Relaxed);
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: installs a handler that only calls kill.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    unsafe {
        libc::write(go[1], [1u8].as_ptr().cast(), 1);
        libc::close(go[1]);
    }

    let mut tracer = Tracer {
        config,
        channel: channel.take(),
        log,
        tally: Tally::default(),
        pending: HashMap::new(),
        sockets: HashMap::new(),
        last_peer: HashMap::new(),
        exchanges: HashMap::new(),
        n: 0,
    };
    let status = tracer.trace(pid, report[0], &shown)?;
    if tracer.channel.is_none() {
        eprintln!("{}", tracer.tally.summary());
    }
    Ok(status)
}

struct Channel {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// A call stopped at its `before` point, waiting for its `after`.
#[derive(Clone, Debug)]
struct Pending {
    call: Call,
    kind: PointKind,
    path: Option<String>,
    to: Option<String>,
    peer: Option<Peer>,
    bytes: Option<u64>,
    /// A request's bytes told this about it (see [`Exchange::sent`]).
    request: Option<HttpRequest>,
    /// A receive from the world: its socket and where the bytes land, to read them at its exit.
    receive: Option<Receive>,
}

#[derive(Clone, Copy, Debug)]
struct Receive {
    inode: u64,
    buffer: ReceiveBuffer,
}

#[derive(Clone, Copy, Debug)]
enum ReceiveBuffer {
    /// `read`/`recvfrom`: one buffer.
    Plain(u64),
    /// `recvmsg`: a `struct msghdr`.
    Message(u64),
}

/// What an fd stands for, as far as crash points go.
enum FdTarget {
    Data(String),
    World { inode: u64, address: SocketAddr },
    Other,
}

struct Tracer {
    config: Config,
    channel: Option<Channel>,
    log: Option<std::fs::File>,
    tally: Tally,
    /// Threads resumed with PTRACE_SYSCALL to reach the `after` point of their call.
    pending: HashMap<i32, Pending>,
    /// Socket inode → its fake-world address, if it talks to the world (an inode names one
    /// socket for its whole life).
    sockets: HashMap<u64, Option<SocketAddr>>,
    /// Socket inode → the part of the world its last request went to (HTTP/1: answers follow).
    last_peer: HashMap<u64, Peer>,
    /// Socket inode → the exchange under way on it.
    exchanges: HashMap<u64, Exchange>,
    n: u64,
}

impl Tracer {
    fn trace(&mut self, child: i32, report: i32, shown: &str) -> Result<i32, TracerError> {
        let mut exec_seen = false;
        loop {
            let mut status = 0;
            // SAFETY: waits for any traced thread or process (__WALL: threads too).
            let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
            if tid < 0 {
                let source = errno();
                if source.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(TracerError::System { what: "waitpid", source });
            }
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.pending.remove(&tid);
                if tid != child {
                    continue;
                }
                if !exec_seen {
                    return Err(self.early_exit(status, report, shown));
                }
                // Other traced processes (forks of the program) die with us: PTRACE_O_EXITKILL.
                return Ok(if libc::WIFEXITED(status) {
                    libc::WEXITSTATUS(status)
                } else {
                    128 + libc::WTERMSIG(status)
                });
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let signal = libc::WSTOPSIG(status);
            let event = status >> 16;
            match event {
                libc::PTRACE_EVENT_SECCOMP => {
                    self.tally.stops += 1;
                    self.on_entry(tid)?;
                }
                PTRACE_EVENT_STOP => {
                    if matches!(signal, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) {
                        // A group-stop (the harness froze the runtime): stay stopped, but wake on
                        // SIGCONT.
                        unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0, 0) };
                    } else {
                        // A new thread's first stop, or an interrupt.
                        self.resume(tid, 0);
                    }
                }
                0 if signal == (libc::SIGTRAP | 0x80) => self.on_exit(tid)?,
                0 => self.resume(tid, signal),
                libc::PTRACE_EVENT_EXEC => {
                    exec_seen = true;
                    self.resume(tid, 0);
                }
                _ => self.resume(tid, 0),
            }
        }
    }

    /// The child exited before exec: seccomp refused (it told us why) or exec failed.
    fn early_exit(&self, status: i32, report: i32, shown: &str) -> TracerError {
        let mut code = 0i32;
        // SAFETY: reads at most 4 bytes into a local.
        let n = unsafe { libc::read(report, (&mut code as *mut i32).cast(), 4) };
        if n == 4 {
            return TracerError::NotPermitted {
                what: "seccomp (PR_SET_SECCOMP)",
                source: std::io::Error::from_raw_os_error(code),
            };
        }
        let source = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 127 {
            std::io::Error::other("exec failed")
        } else {
            std::io::Error::other("it ended before it started")
        };
        TracerError::Program { program: shown.to_owned(), source }
    }

    /// Restarts a stopped thread: to its call's exit if a point waits there, else freely.
    fn resume(&self, tid: i32, signal: i32) {
        let request = if self.pending.contains_key(&tid) { libc::PTRACE_SYSCALL } else { libc::PTRACE_CONT };
        // An error means the thread is gone (killed meanwhile): nothing to resume.
        unsafe { libc::ptrace(request, tid, 0, signal as libc::c_long) };
    }

    fn registers(tid: i32) -> Option<libc::user_regs_struct> {
        // SAFETY: GETREGS fills the struct we own.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _) } == 0;
        ok.then_some(regs)
    }

    fn on_entry(&mut self, tid: i32) -> Result<(), TracerError> {
        let Some(regs) = Self::registers(tid) else { return Ok(()) };
        let pending = Call::from_number(regs.orig_rax as i64).and_then(|call| self.classify(tid, call, &regs));
        if let Some(pending) = pending {
            if pending.kind != PointKind::Answer {
                self.announce(tid, When::Before, &pending, None, None)?;
            }
            self.pending.insert(tid, pending);
        }
        self.resume(tid, 0);
        Ok(())
    }

    fn on_exit(&mut self, tid: i32) -> Result<(), TracerError> {
        if let Some(pending) = self.pending.remove(&tid) {
            let ret = Self::registers(tid).map(|regs| regs.rax as i64);
            if pending.kind != PointKind::Answer || ret.is_some_and(|r| r > 0) {
                let mut pending = pending;
                let mut answer = None;
                if let (Some(receive), Some(n)) = (pending.receive, ret.filter(|&r| r > 0)) {
                    let bytes = received_bytes(tid, receive.buffer, n as usize);
                    let exchange = self.exchanges.entry(receive.inode).or_default();
                    if let Some((request, complete)) = bytes.and_then(|b| exchange.received(&b)) {
                        pending.request = request;
                        answer = Some(complete);
                    }
                }
                self.announce(tid, When::After, &pending, ret, answer)?;
            }
        }
        self.resume(tid, 0);
        Ok(())
    }

    /// Sends one point and waits for the harness's answer; the thread stays stopped meanwhile.
    fn announce(
        &mut self,
        tid: i32,
        when: When,
        pending: &Pending,
        ret: Option<i64>,
        answer: Option<HttpAnswer>,
    ) -> Result<(), TracerError> {
        self.n += 1;
        *self.tally.points.entry(pending.kind).or_default() += 1;
        if self.channel.is_none() && self.log.is_none() {
            return Ok(());
        }
        let point = Point {
            n: self.n,
            when,
            call: pending.call.name().to_owned(),
            kind: pending.kind,
            path: pending.path.clone(),
            to: pending.to.clone(),
            peer: pending.peer,
            bytes: pending.bytes,
            ret,
            tid,
            // A request is told on its `before` point, an answer on the receive that completes it.
            request: if when == When::Before || answer.is_some() { pending.request.clone() } else { None },
            answer,
        };
        let mut line = serde_json::to_string(&point).expect("a point serialises");
        line.push('\n');
        if let Some(log) = &mut self.log {
            // A log that cannot be written loses measurements, not correctness: carry on.
            let _ = log.write_all(line.as_bytes());
        }
        let path = || self.config.socket.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let Some(channel) = &mut self.channel else { return Ok(()) };
        channel.writer.write_all(line.as_bytes()).map_err(|source| TracerError::Socket { path: path(), source })?;
        let mut answer = String::new();
        let read =
            channel.reader.read_line(&mut answer).map_err(|source| TracerError::Socket { path: path(), source })?;
        if read == 0 {
            return Err(TracerError::Answer { found: "the connection closed".to_owned() });
        }
        match serde_json::from_str::<serde_json::Value>(answer.trim()) {
            Ok(value) if value == serde_json::json!({"action": "resume"}) => Ok(()),
            _ => Err(TracerError::Answer { found: answer.trim().to_owned() }),
        }
    }

    /// Whether this call is a crash point, and which.
    fn classify(&mut self, tid: i32, call: Call, regs: &libc::user_regs_struct) -> Option<Pending> {
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        let fd = args[0] as i32;
        let pending = |kind, path: Option<String>, peer, bytes| Pending {
            call,
            kind,
            path,
            to: None,
            peer,
            bytes,
            request: None,
            receive: None,
        };
        match call {
            Call::Write
            | Call::Pwrite64
            | Call::Writev
            | Call::Pwritev
            | Call::Pwritev2
            | Call::Sendto
            | Call::Sendmsg => {
                let bytes = match call {
                    Call::Write | Call::Pwrite64 | Call::Sendto => Some(args[2]),
                    Call::Sendmsg => msghdr_bytes(tid, args[1]),
                    _ => iovec_bytes(tid, args[1], args[2]),
                };
                match self.fd_target(tid, fd) {
                    FdTarget::Data(path) => Some(pending(PointKind::Durable, Some(path), None, bytes)),
                    FdTarget::World { inode, address } => {
                        let sent = match call {
                            Call::Write | Call::Pwrite64 | Call::Sendto => {
                                read_memory(tid, args[1], (args[2] as usize).min(MESSAGE_LIMIT))
                            }
                            Call::Sendmsg => msghdr_contents(tid, args[1]),
                            _ => iovec_contents(tid, args[1], args[2], MESSAGE_LIMIT),
                        };
                        let named =
                            sent.as_deref().and_then(request_path).and_then(|p| self.config.peer_of(address, Some(p)));
                        let peer = named
                            .or_else(|| self.last_peer.get(&inode).copied())
                            .or_else(|| self.config.peer_of(address, None))
                            .unwrap_or(Peer::World);
                        self.last_peer.insert(inode, peer);
                        let exchange = self.exchanges.entry(inode).or_default();
                        if let Some(sent) = &sent {
                            exchange.sent(sent);
                        }
                        let request = exchange.request.clone();
                        Some(Pending { request, ..pending(PointKind::Request, None, Some(peer), bytes) })
                    }
                    FdTarget::Other => None,
                }
            }
            Call::Read | Call::Recvfrom | Call::Recvmsg => match self.fd_target(tid, fd) {
                FdTarget::World { inode, address } => {
                    let peer = self
                        .last_peer
                        .get(&inode)
                        .copied()
                        .or_else(|| self.config.peer_of(address, None))
                        .unwrap_or(Peer::World);
                    let (bytes, buffer) = if call == Call::Recvmsg {
                        (msghdr_bytes(tid, args[1]), ReceiveBuffer::Message(args[1]))
                    } else {
                        (Some(args[2]), ReceiveBuffer::Plain(args[1]))
                    };
                    let receive = Some(Receive { inode, buffer });
                    Some(Pending { receive, ..pending(PointKind::Answer, None, Some(peer), bytes) })
                }
                _ => None,
            },
            Call::Fsync | Call::Fdatasync | Call::SyncFileRange => match self.fd_target(tid, fd) {
                FdTarget::Data(path) => Some(pending(PointKind::Sync, Some(path), None, None)),
                _ => None,
            },
            Call::Ftruncate | Call::Fallocate => match self.fd_target(tid, fd) {
                FdTarget::Data(path) => Some(pending(PointKind::Durable, Some(path), None, None)),
                _ => None,
            },
            Call::Truncate => {
                let path = self.path_arg(tid, libc::AT_FDCWD, args[0])?;
                Some(pending(PointKind::Durable, Some(path), None, None))
            }
            Call::Unlink | Call::Unlinkat => {
                let path = if call == Call::Unlink {
                    self.path_arg(tid, libc::AT_FDCWD, args[0])
                } else {
                    self.path_arg(tid, args[0] as i32, args[1])
                }?;
                Some(pending(PointKind::Unlink, Some(path), None, None))
            }
            Call::Rename | Call::Renameat | Call::Renameat2 => {
                let (from, to) = if call == Call::Rename {
                    (resolve_path(tid, libc::AT_FDCWD, args[0]), resolve_path(tid, libc::AT_FDCWD, args[1]))
                } else {
                    (resolve_path(tid, args[0] as i32, args[1]), resolve_path(tid, args[2] as i32, args[3]))
                };
                let touches = [&from, &to].into_iter().flatten().any(|p| self.config.is_data(p));
                touches.then(|| Pending {
                    kind: PointKind::Rename,
                    path: from.map(|p| p.display().to_string()),
                    to: to.map(|p| p.display().to_string()),
                    ..pending(PointKind::Rename, None, None, None)
                })
            }
            Call::Connect => {
                let address = sockaddr(tid, args[1], args[2]).filter(|a| self.config.is_world(*a))?;
                let peer = self.config.peer_of(address, None).unwrap_or(Peer::World);
                Some(pending(PointKind::Connect, None, Some(peer), None))
            }
        }
    }

    /// A path argument, if it names something under the data dir.
    fn path_arg(&self, tid: i32, dirfd: i32, address: u64) -> Option<String> {
        let path = resolve_path(tid, dirfd, address)?;
        self.config.is_data(&path).then(|| path.display().to_string())
    }

    fn fd_target(&mut self, tid: i32, fd: i32) -> FdTarget {
        let Ok(link) = std::fs::read_link(format!("/proc/{tid}/fd/{fd}")) else { return FdTarget::Other };
        let text = link.as_os_str().as_bytes();
        if let Some(inode) = text.strip_prefix(b"socket:[").and_then(|rest| rest.strip_suffix(b"]")) {
            let Some(inode) = std::str::from_utf8(inode).ok().and_then(|s| s.parse::<u64>().ok()) else {
                return FdTarget::Other;
            };
            let address = match self.sockets.get(&inode) {
                Some(address) => *address,
                None => {
                    let address = socket_peer(tid, inode).filter(|a| self.config.is_world(*a));
                    self.sockets.insert(inode, address);
                    address
                }
            };
            return address.map_or(FdTarget::Other, |address| FdTarget::World { inode, address });
        }
        if self.config.is_data(&link) { FdTarget::Data(link.display().to_string()) } else { FdTarget::Other }
    }
}

/// Reads `len` bytes of the tracee's memory.
fn read_memory(tid: i32, address: u64, len: usize) -> Option<Vec<u8>> {
    let mut buffer = vec![0u8; len];
    let local = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: address as *mut _, iov_len: len };
    // SAFETY: writes at most `len` bytes into `buffer`.
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    (n == len as isize).then_some(buffer)
}

/// A NUL-terminated string in the tracee, read page by page (the next page may be unmapped).
fn read_string(tid: i32, address: u64) -> Option<Vec<u8>> {
    const PAGE: u64 = 4096;
    let mut out = Vec::new();
    let mut at = address;
    while out.len() < libc::PATH_MAX as usize {
        let chunk = read_memory(tid, at, (PAGE - at % PAGE) as usize)?;
        if let Some(end) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Some(out);
        }
        at += chunk.len() as u64;
        out.extend_from_slice(&chunk);
    }
    None
}

/// A path argument made absolute against its directory fd (or the thread's cwd).
fn resolve_path(tid: i32, dirfd: i32, address: u64) -> Option<PathBuf> {
    let path = PathBuf::from(OsStr::from_bytes(&read_string(tid, address)?));
    if path.is_absolute() {
        return Some(path);
    }
    let base = if dirfd == libc::AT_FDCWD {
        std::fs::read_link(format!("/proc/{tid}/cwd")).ok()?
    } else {
        std::fs::read_link(format!("/proc/{tid}/fd/{dirfd}")).ok()?
    };
    Some(base.join(path))
}

fn iovec_bytes(tid: i32, address: u64, count: u64) -> Option<u64> {
    let count = usize::try_from(count).ok().filter(|&c| c <= 1024)?;
    let raw = read_memory(tid, address, count * 16)?;
    Some(raw.chunks_exact(16).map(|iov| u64::from_ne_bytes(iov[8..16].try_into().unwrap())).sum())
}

/// What an iovec array holds, up to `limit` bytes.
fn iovec_contents(tid: i32, address: u64, count: u64, limit: usize) -> Option<Vec<u8>> {
    let count = usize::try_from(count).ok().filter(|&c| c <= 1024)?;
    let raw = read_memory(tid, address, count * 16)?;
    let mut out = Vec::new();
    for iov in raw.chunks_exact(16) {
        let base = u64::from_ne_bytes(iov[0..8].try_into().ok()?);
        let len = u64::from_ne_bytes(iov[8..16].try_into().ok()?) as usize;
        let take = len.min(limit - out.len());
        out.extend_from_slice(&read_memory(tid, base, take)?);
        if out.len() == limit {
            break;
        }
    }
    Some(out)
}

/// What a `struct msghdr`'s iovecs hold (msg_iov at offset 16, msg_iovlen at 24 on x86_64).
fn msghdr_contents(tid: i32, address: u64) -> Option<Vec<u8>> {
    let raw = read_memory(tid, address, 32)?;
    let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
    let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
    iovec_contents(tid, iov, len, MESSAGE_LIMIT)
}

/// The `n` bytes a receive just put in its buffer(s).
fn received_bytes(tid: i32, buffer: ReceiveBuffer, n: usize) -> Option<Vec<u8>> {
    let n = n.min(MESSAGE_LIMIT);
    match buffer {
        ReceiveBuffer::Plain(address) => read_memory(tid, address, n),
        ReceiveBuffer::Message(address) => {
            let raw = read_memory(tid, address, 32)?;
            let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
            let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
            iovec_contents(tid, iov, len, n)
        }
    }
}

/// The bytes a `struct msghdr`'s iovecs hold (msg_iov at offset 16, msg_iovlen at 24 on x86_64).
fn msghdr_bytes(tid: i32, address: u64) -> Option<u64> {
    let raw = read_memory(tid, address, 32)?;
    let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
    let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
    iovec_bytes(tid, iov, len)
}

/// The address a `connect` names, if it is an IPv4 or IPv6 one.
fn sockaddr(tid: i32, address: u64, len: u64) -> Option<SocketAddr> {
    let raw = read_memory(tid, address, usize::try_from(len).ok().filter(|&l| l <= 128)?)?;
    let family = u16::from_ne_bytes(raw.get(0..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(raw.get(2..4)?.try_into().ok()?);
    match family as i32 {
        libc::AF_INET => {
            let ip: [u8; 4] = raw.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::new(Ipv4Addr::from(ip).into(), port))
        }
        libc::AF_INET6 => {
            let ip: [u8; 16] = raw.get(8..24)?.try_into().ok()?;
            let ip = Ipv6Addr::from(ip);
            Some(SocketAddr::new(ip.to_ipv4_mapped().map_or(ip.into(), Into::into), port))
        }
        _ => None,
    }
}

/// The remote address of the TCP socket with this inode, from the tracee's network namespace.
fn socket_peer(tid: i32, inode: u64) -> Option<SocketAddr> {
    ["tcp", "tcp6"].into_iter().find_map(|table| {
        let text = std::fs::read_to_string(format!("/proc/{tid}/net/{table}")).ok()?;
        text.lines().skip(1).find_map(|line| parse_tcp_line(line).filter(|(i, _)| *i == inode).map(|(_, a)| a))
    })
}

/// One row of /proc/net/tcp{,6}: (inode, remote address). Addresses are hex words in the
/// kernel's byte order (little-endian on x86_64), ports plain hex.
pub fn parse_tcp_line(line: &str) -> Option<(u64, SocketAddr)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (ip, port) = fields.get(2)?.split_once(':')?;
    let inode = fields.get(9)?.parse().ok()?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let words: Vec<u32> =
        (0..ip.len() / 8).map(|i| u32::from_str_radix(&ip[i * 8..i * 8 + 8], 16)).collect::<Result<_, _>>().ok()?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let ip: std::net::IpAddr = match bytes.len() {
        4 => Ipv4Addr::from(<[u8; 4]>::try_from(bytes).ok()?).into(),
        16 => {
            let ip = Ipv6Addr::from(<[u8; 16]>::try_from(bytes).ok()?);
            ip.to_ipv4_mapped().map_or(ip.into(), Into::into)
        }
        _ => return None,
    };
    Some((inode, SocketAddr::new(ip, port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_permitted_says_what_was_refused_and_what_to_do() {
        let error = TracerError::NotPermitted {
            what: "ptrace (PTRACE_SEIZE)",
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        assert_eq!(error.exit_code(), NOT_PERMITTED_EXIT);
        assert_eq!(
            error.to_string(),
            "killpoint-tracer: syscall points are not available here: ptrace (PTRACE_SEIZE) was refused \
             (Operation not permitted (os error 1)); use the probe or black-box instead"
        );
    }

    #[test]
    fn tcp_rows_give_inode_and_peer() {
        let v4 = "   0: 0100007F:A3F2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1";
        assert_eq!(parse_tcp_line(v4), Some((4242, "127.0.0.1:8080".parse().unwrap())));
        let v6 = "   0: 0000000000000000FFFF00000100007F:A3F2 0000000000000000FFFF00000100007F:0050 01 00000000:00000000 00:00000000 00000000  1000        0 77 1";
        assert_eq!(parse_tcp_line(v6), Some((77, "127.0.0.1:80".parse().unwrap())));
    }

    #[test]
    fn world_urls_give_addresses_and_paths() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(split_url("http://127.0.0.1:41000"), Some((at("127.0.0.1:41000"), "/".to_owned())));
        assert_eq!(split_url("http://127.0.0.1:41000/policy"), Some((at("127.0.0.1:41000"), "/policy".to_owned())));
        assert_eq!(split_url("http://localhost:41000"), None);
    }

    #[test]
    fn requests_name_the_part_of_the_world_by_path() {
        let address: SocketAddr = "127.0.0.1:41000".parse().unwrap();
        let url = |path: &str, peer| WorldUrl { address, path: path.to_owned(), peer };
        let config = Config {
            world: vec![
                url("/provider", Peer::Provider),
                url("/consumers", Peer::Consumers),
                url("/policy", Peer::Policy),
            ],
            ..Config::default()
        };
        let path = request_path(b"POST /consumers/ledger HTTP/1.1\r\nhost: x\r\n").unwrap();
        assert_eq!(path, "/consumers/ledger");
        assert_eq!(config.peer_of(address, Some(path)), Some(Peer::Consumers));
        assert_eq!(config.peer_of(address, Some("/elsewhere")), None);
        assert_eq!(config.peer_of(address, None), None, "three parts share the address");
        assert_eq!(request_path(b"{\"amount\":3}"), None, "a body is no request line");
    }

    #[test]
    fn points_serialise_as_documented() {
        let point = Point {
            n: 18,
            when: When::After,
            call: "sendto".to_owned(),
            kind: PointKind::Request,
            path: None,
            to: None,
            peer: Some(Peer::Provider),
            bytes: Some(310),
            ret: Some(310),
            tid: 1234,
            request: None,
            answer: None,
        };
        assert_eq!(
            serde_json::to_string(&point).unwrap(),
            r#"{"n":18,"when":"after","call":"sendto","kind":"request","peer":"provider","bytes":310,"ret":310,"tid":1234}"#
        );
    }

    #[test]
    fn an_exchange_is_read_from_the_bytes_as_they_pass() {
        let mut exchange = Exchange::default();
        // Head and body in two sends (as some clients write them): the body completes the request.
        let body = br#"{"operation_id": "op-1", "tool": "charge_card"}"#;
        let head = format!(
            "POST /policy/check HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nIdempotency-Key: k-1\r\n\r\n",
            body.len()
        );
        exchange.sent(head.as_bytes());
        let request = exchange.request.clone().unwrap();
        assert_eq!(
            (request.method.as_str(), request.path.as_str(), request.key.as_deref()),
            ("POST", "/policy/check", Some("k-1"))
        );
        assert_eq!(request.body, None, "the body has not been sent yet");
        exchange.sent(body);
        let body = exchange.request.clone().unwrap().body.unwrap();
        assert_eq!(body["operation_id"], "op-1");
        // The answer in pieces: complete only when Content-Length is reached.
        assert_eq!(exchange.received(b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{\"allowed\""), None);
        let (answered, answer) = exchange.received(b":true}").unwrap();
        assert_eq!(answer, HttpAnswer { status: 200, body: Some(serde_json::json!({"allowed": true})) });
        assert_eq!(answered.unwrap().path, "/policy/check");
        // Keep-alive: the next request line starts the next exchange.
        exchange.sent(b"GET /provider/tools/charge_card/effects?idempotency_key=k-1 HTTP/1.1\r\n\r\n");
        assert_eq!(exchange.request.clone().unwrap().method, "GET");
        let chunked = b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(
            exchange.received(chunked).unwrap().1,
            HttpAnswer { status: 404, body: Some(serde_json::json!({})) }
        );
    }

    #[test]
    fn summary_counts_durable_and_network_points() {
        let mut tally = Tally { stops: 9, ..Tally::default() };
        tally.points.insert(PointKind::Durable, 4);
        tally.points.insert(PointKind::Request, 2);
        assert_eq!(
            tally.summary(),
            "killpoint-tracer: 6 crash points (4 durable, 2 network: durable 4, sync 0, rename 0, unlink 0, \
             connect 0, request 2, answer 0); 9 syscall stops"
        );
    }
}
