//! What a runtime does outside the world the harness gave it: a file created or opened to write
//! outside `KILLPOINT_DATA_DIR` (CONTRACT.md §2-2: all durable state lives there), and a
//! connection to an address that is neither the fake world nor a declared service (§2-5).
//!
//! These are not crash points: nothing is announced and the call is never held. Each escape is
//! appended, once per place per tracer, as one JSON line to `$KILLPOINT_TRACE_ESCAPES`, created at
//! the first: a runtime that escapes nowhere costs no write, and a SIGKILLed tracer has already
//! left what it saw. The harness reads the file once the run is over (the judge's `sandboxed`).
//!
//! What is allowed outside the data dir, and why it is not durable state:
//! - `/dev/` (`null`, `tty`, `pts/…`, `urandom`) but `/dev/shm/`, which keeps files across a
//!   process's death; `/proc/` and `/sys/`: kernel interfaces, nothing is stored;
//! - a path through a `__pycache__` directory: Python's bytecode cache, derived from the code
//!   and rebuilt when lost, holds nothing the runtime was told;
//! - `O_TMPFILE`: a file with no name, gone when closed.
//!
//! A Unix-domain socket is not an address on the network (the probe's, nscd's, journald's): its
//! connections are not checked. A name lookup is: it connects to the resolver (port 53).

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config::Config;
use super::memory::{read_memory, resolve_path};
use super::seccomp::{Call, WRITE_FLAGS};
use super::sockets::sockaddr;
use super::state::Tracer;

/// At most this many escapes are written per tracer (per incarnation): enough to name the
/// culprit; a runtime writing a file per request would otherwise fill the disk.
const LIMIT: usize = 32;

/// What kind of place a runtime went outside of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EscapeKind {
    /// A file or directory created, opened to write, renamed into place or truncated outside the
    /// data dir (§2-2).
    Write,
    /// A connection to (or a datagram for) an address outside the world (§2-5).
    Contact,
}

/// One escape, as the tracer writes it (one JSON line). Seen when the call was made, before it
/// ran: an attempt counts whether or not it succeeded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Escape {
    pub kind: EscapeKind,
    /// The system call's name, as in `man 2`.
    pub call: String,
    /// For a write: the path, made absolute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// For a contact: the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<SocketAddr>,
    /// The calling thread's name (`/proc/<tid>/comm`), to tell a runtime's helper from itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<String>,
}

impl Escape {
    /// `openat /tmp/cache/state.json`, `connect 192.0.2.1:80`.
    pub fn place(&self) -> String {
        let place = self.path.clone().or_else(|| self.address.map(|a| a.to_string())).unwrap_or_default();
        format!("{} {place}", self.call)
    }
}

/// Whether writing at `path` (absolute) keeps to the data dir or to what is allowed beside it
/// (see the module's documentation).
pub(super) fn allowed_write(config: &Config, path: &Path) -> bool {
    let path = normalise(path);
    if config.is_data(&path) || path.components().any(|c| c.as_os_str() == "__pycache__") {
        return true;
    }
    let kernel = ["/proc", "/sys"].iter().any(|p| path.starts_with(p));
    kernel || (path.starts_with("/dev") && !path.starts_with("/dev/shm"))
}

/// Whether `address` is the fake world's or a declared service's.
pub(super) fn allowed_contact(config: &Config, address: SocketAddr) -> bool {
    config.is_world(address) || config.services.contains(&address)
}

/// `a/./b/../c` as `a/c`, without asking the file system: `data/../elsewhere` is not in `data`.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl Tracer {
    /// An `open`/`openat`/`openat2`/`creat`/`mkdir`/`mkdirat`: an escape if it creates or opens to
    /// write a path outside what is allowed.
    pub(super) fn observe_create(&mut self, tid: i32, call: Call, args: &[u64; 6]) {
        let (dirfd, address, flags) = match call {
            Call::Open => (libc::AT_FDCWD, args[0], Some(args[1] as u32)),
            Call::Openat => (args[0] as i32, args[1], Some(args[2] as u32)),
            // `struct open_how` starts with its u64 flags.
            Call::Openat2 => (args[0] as i32, args[1], open_how_flags(tid, args[2])),
            Call::Creat | Call::Mkdir => (libc::AT_FDCWD, args[0], None),
            Call::Mkdirat => (args[0] as i32, args[1], None),
            _ => return,
        };
        if let Some(flags) = flags {
            let tmpfile = libc::O_TMPFILE as u32;
            if flags & WRITE_FLAGS == 0 || flags & tmpfile == tmpfile {
                return;
            }
        }
        if let Some(path) = resolve_path(tid, dirfd, address) {
            self.observe_path(tid, call, path);
        }
    }

    /// A path a call writes at (a rename's new name, a truncation): an escape unless allowed.
    pub(super) fn observe_path(&mut self, tid: i32, call: Call, path: PathBuf) {
        if !allowed_write(&self.config, &path) {
            let path = Some(normalise(&path).display().to_string());
            self.escape(
                tid,
                Escape { kind: EscapeKind::Write, call: call.name().to_owned(), path, address: None, program: None },
            );
        }
    }

    /// A `connect`, or a send naming its destination (`sendto`, `sendmsg` on an unconnected
    /// socket): an escape unless the address is the world's or a service's. Not an IP address
    /// (a Unix socket, `AF_UNSPEC`): not checked.
    pub(super) fn observe_contact(&mut self, tid: i32, call: Call, address: u64, len: u64) {
        if address == 0 {
            return;
        }
        let Some(address) = sockaddr(tid, address, len) else { return };
        if !allowed_contact(&self.config, address) {
            let escape = Escape {
                kind: EscapeKind::Contact,
                call: call.name().to_owned(),
                path: None,
                address: Some(address),
                program: None,
            };
            self.escape(tid, escape);
        }
    }

    /// The destination a `sendmsg` names (`msg_name` at offset 0, `msg_namelen` at 8), if any.
    pub(super) fn observe_sendmsg(&mut self, tid: i32, call: Call, message: u64) {
        let Some(raw) = read_memory(tid, message, 12) else { return };
        let name = u64::from_ne_bytes(raw[0..8].try_into().expect("8 bytes"));
        let len = u32::from_ne_bytes(raw[8..12].try_into().expect("4 bytes"));
        self.observe_contact(tid, call, name, u64::from(len));
    }

    /// Writes one escape, the first time its place is seen, up to [`LIMIT`]. A file that cannot
    /// be written loses the report, never the run: the tracer carries on.
    fn escape(&mut self, tid: i32, mut escape: Escape) {
        let Some(file) = self.config.escapes.clone() else { return };
        if self.escapes.len() >= LIMIT || !self.escapes.insert(escape.place()) {
            return;
        }
        escape.program = std::fs::read_to_string(format!("/proc/{tid}/comm")).ok().map(|c| c.trim().to_owned());
        let mut line = serde_json::to_string(&escape).expect("an escape serialises");
        line.push('\n');
        let opened = std::fs::OpenOptions::new().create(true).append(true).open(&file);
        // One write of a short line to an O_APPEND file: tracers of two incarnations never
        // interleave within a line.
        let _ = opened.and_then(|mut f| f.write_all(line.as_bytes()));
    }
}

/// `struct open_how`'s flags, if they can be read (`openat2`).
fn open_how_flags(tid: i32, how: u64) -> Option<u32> {
    let raw = read_memory(tid, how, 8)?;
    Some(u64::from_ne_bytes(raw.try_into().ok()?) as u32)
}

/// Every escape in a tracer's file (`$KILLPOINT_TRACE_ESCAPES`), in order; none if it was never
/// written. A line that cannot be read is skipped: a tracer killed mid-write leaves at most one.
pub fn read_escapes(file: &Path) -> Vec<Escape> {
    let Ok(text) = std::fs::read_to_string(file) else { return Vec::new() };
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let world = vec![super::super::config::WorldUrl {
            address: "127.0.0.1:41000".parse().unwrap(),
            path: "/provider".to_owned(),
            peer: super::super::point::Peer::Provider,
        }];
        Config {
            data_dirs: vec![PathBuf::from("/tmp/killpoint-run/data")],
            world,
            services: vec!["127.0.0.1:42000".parse().unwrap()],
            ..Config::default()
        }
    }

    #[test]
    fn writes_are_allowed_in_the_data_dir_and_kernel_files_only() {
        let config = config();
        let allowed = |p: &str| allowed_write(&config, Path::new(p));
        assert!(allowed("/tmp/killpoint-run/data/runtime.sqlite3-wal"));
        assert!(allowed("/dev/null"));
        assert!(allowed("/dev/pts/3"));
        assert!(allowed("/proc/self/oom_score_adj"));
        assert!(allowed("/home/me/app/__pycache__/worker.cpython-312.pyc.4242"));
        assert!(!allowed("/tmp/killpoint-run/data-cache/started"), "beside the data dir is outside it");
        assert!(!allowed("/tmp/killpoint-run/data/../elsewhere"), "`..` leaves the data dir");
        assert!(!allowed("/dev/shm/sem.lock"), "shared memory outlives the process");
        assert!(!allowed("/tmp/workflow-186"));
        assert!(!allowed("/home/me/.cache/agent/state.json"));
    }

    #[test]
    fn contact_is_allowed_with_the_world_and_the_services_only() {
        let config = config();
        let allowed = |a: &str| allowed_contact(&config, a.parse().unwrap());
        assert!(allowed("127.0.0.1:41000"));
        assert!(allowed("127.0.0.1:42000"));
        assert!(!allowed("127.0.0.1:5432"), "a loopback port nobody declared is outside the world");
        assert!(!allowed("127.0.0.53:53"), "a name lookup is contact");
        assert!(!allowed("192.0.2.1:80"));
    }

    #[test]
    fn escapes_serialise_as_one_line_each() {
        let escape = Escape {
            kind: EscapeKind::Contact,
            call: "connect".to_owned(),
            path: None,
            address: Some("192.0.2.1:80".parse().unwrap()),
            program: Some("killpoint-runti".to_owned()),
        };
        let line = serde_json::to_string(&escape).unwrap();
        assert_eq!(line, r#"{"kind":"contact","call":"connect","address":"192.0.2.1:80","program":"killpoint-runti"}"#);
        assert_eq!(escape.place(), "connect 192.0.2.1:80");
    }
}
