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
//!   not stopped keep running meanwhile. An answer `{"action":"go_on"}` resumes that point and
//!   every later one of the incarnation unasked: the harness has nothing left to decide there
//!   (`run::traced`'s `go_on`), and the points are only told; `{"action":"go_on","ask":"explored"}`
//!   the same, but for the explored points (`PointKind::explored`), where the harness still builds
//!   crash states.
//!
//! The parts, a file each: the point vocabulary the harness reads (`point`), the environment
//! (`config`), the traced-call table and its filter (`seccomp`), starting the program (`launch`),
//! the wait loop (`ptrace`), what the runtime does outside its data dir and the world (`escape`,
//! not crash points: reported in a file), which calls are points (`classify`, reading the
//! tracee's arguments through `memory` and `sockets`, and the kernel's TCP table through `diag`),
//! the HTTP bytes on a world socket (`exchange`), the socket protocol (`announce`), the errors
//! (`error`) and the count printed at exit (`tally`).
//!
//! Under `$KILLPOINT_SCHEDULE` (`schedule`) the tracer holds every crash-point call at its entry
//! and lets them go one at a time, in an order drawn from a seed, once the runtime has settled;
//! see that folder's comment for how, and for what is and is not controlled.
//!
//! Imports nothing else of the crate: the tracer is the bottom layer, beside `model`.

mod announce;
mod channel;
mod classify;
mod config;
mod diag;
mod error;
mod escape;
mod exchange;
mod launch;
mod memory;
mod pending;
mod point;
mod ptrace;
mod schedule;
mod seccomp;
mod sockets;
mod state;
mod tally;
pub mod tether;

pub use config::{Config, ESCAPES_VARIABLE, WorldUrl};
pub use diag::{TcpRow, tcp_row};
pub use error::{NOT_PERMITTED_EXIT, TracerError};
pub use escape::{Escape, EscapeKind, read_escapes};
pub use launch::run;
pub use point::{Asking, HttpAnswer, HttpRequest, Peer, Point, PointKind, When};
pub use schedule::{PEER_WAIT, SETTLE_LIMIT, Schedule};
pub use seccomp::Call;
pub use sockets::{find_tcp_row, socket_names};
