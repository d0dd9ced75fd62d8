//! What the tracer holds across stops: where points go, and what each stopped thread and each
//! world socket is in the middle of. The wait loop (`ptrace`), the point classification
//! (`classify`) and the socket protocol (`announce`) each add their methods to [`Tracer`]; the
//! type lives here so that none of those files has to import another.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use super::channel::Channel;
use super::config::Config;
use super::exchange::Exchange;
use super::pending::Pending;
use super::point::Peer;
use super::schedule::Scheduler;
use super::tally::Tally;

pub(super) struct Tracer {
    pub(super) config: Config,
    pub(super) channel: Option<Channel>,
    pub(super) log: Option<std::fs::File>,
    pub(super) tally: Tally,
    /// Threads resumed with PTRACE_SYSCALL to reach the `after` point of their call.
    pub(super) pending: HashMap<i32, Pending>,
    /// Socket inode → its fake-world address, if it talks to the world (an inode names one
    /// socket for its whole life).
    pub(super) sockets: HashMap<u64, Option<SocketAddr>>,
    /// Socket inode → the part of the world its last request went to (HTTP/1: answers follow).
    pub(super) last_peer: HashMap<u64, Peer>,
    /// Socket inode → the exchange under way on it.
    pub(super) exchanges: HashMap<u64, Exchange>,
    pub(super) n: u64,
    /// Whether the program has exec'd: until then, its end means it never started.
    pub(super) exec_seen: bool,
    /// The places of the escapes reported so far (see `escape`): each is reported once.
    pub(super) escapes: HashSet<String>,
    /// Under a controlled schedule (`$KILLPOINT_SCHEDULE`): what the schedule holds.
    pub(super) schedule: Option<Scheduler>,
}

impl Tracer {
    pub(super) fn new(config: Config, channel: Option<Channel>, log: Option<std::fs::File>) -> Tracer {
        Tracer {
            config,
            channel,
            log,
            tally: Tally::default(),
            pending: HashMap::new(),
            sockets: HashMap::new(),
            last_peer: HashMap::new(),
            exchanges: HashMap::new(),
            n: 0,
            exec_seen: false,
            escapes: HashSet::new(),
            schedule: None,
        }
    }
}
