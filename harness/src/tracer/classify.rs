//! Which traced calls are crash points, and which kind: a call's arguments, read at its seccomp
//! stop, say what it touches — a file under the data dir, a socket to the fake world, or neither.

use std::net::SocketAddr;
use std::os::unix::ffi::OsStrExt;

use super::exchange::{MESSAGE_LIMIT, request_path};
use super::memory::{
    ReceiveBuffer, iovec_bytes, iovec_contents, msghdr_bytes, msghdr_contents, read_memory, resolve_path,
};
use super::pending::{Pending, Receive};
use super::point::{Peer, PointKind};
use super::seccomp::Call;
use super::sockets::{sockaddr, socket_peer};
use super::state::Tracer;

/// What an fd stands for, as far as crash points go.
enum FdTarget {
    Data(String),
    World { inode: u64, address: SocketAddr },
    Other,
}

impl Tracer {
    /// Whether this call is a crash point, and which.
    pub(super) fn classify(&mut self, tid: i32, call: Call, regs: &libc::user_regs_struct) -> Option<Pending> {
        let args = [regs.rdi, regs.rsi, regs.rdx, regs.r10, regs.r8, regs.r9];
        let fd = args[0] as i32;
        let pending = |kind, path: Option<String>, peer, bytes| Pending::new(call, kind, path, peer, bytes);
        match call {
            Call::Write
            | Call::Pwrite64
            | Call::Writev
            | Call::Pwritev
            | Call::Pwritev2
            | Call::Sendto
            | Call::Sendmsg => {
                // A datagram may name its destination; a connected socket's was seen at connect.
                match call {
                    Call::Sendto => self.observe_contact(tid, call, args[4], args[5]),
                    Call::Sendmsg => self.observe_sendmsg(tid, call, args[1]),
                    _ => {}
                }
                self.classify_send(tid, call, &args)
            }
            Call::Read | Call::Recvfrom | Call::Recvmsg => self.classify_receive(tid, call, &args),
            Call::Fsync | Call::Fdatasync | Call::SyncFileRange => match self.fd_target(tid, fd) {
                FdTarget::Data(path) => Some(pending(PointKind::Sync, Some(path), None, None)),
                _ => None,
            },
            // Everything synced (syncfs: the fd's file system, taken to be the data dir's): the
            // data dir stands for what it made durable.
            Call::Sync | Call::Syncfs => {
                let dir = self.config.data_dirs.first()?;
                Some(pending(PointKind::Sync, Some(dir.display().to_string()), None, None))
            }
            Call::Ftruncate | Call::Fallocate => match self.fd_target(tid, fd) {
                FdTarget::Data(path) => Some(pending(PointKind::Durable, Some(path), None, None)),
                _ => None,
            },
            Call::Truncate => {
                let path = resolve_path(tid, libc::AT_FDCWD, args[0])?;
                if !self.config.is_data(&path) {
                    self.observe_path(tid, call, path);
                    return None;
                }
                Some(pending(PointKind::Durable, Some(path.display().to_string()), None, None))
            }
            Call::Unlink | Call::Unlinkat => {
                let path = if call == Call::Unlink {
                    self.path_arg(tid, libc::AT_FDCWD, args[0])
                } else {
                    self.path_arg(tid, args[0] as i32, args[1])
                }?;
                Some(pending(PointKind::Unlink, Some(path), None, None))
            }
            Call::Rename | Call::Renameat | Call::Renameat2 => self.classify_rename(tid, call, &args),
            Call::Open | Call::Openat | Call::Openat2 | Call::Creat | Call::Mkdir | Call::Mkdirat => {
                self.observe_create(tid, call, &args);
                None
            }
            Call::Connect => {
                self.observe_contact(tid, call, args[1], args[2]);
                let address = sockaddr(tid, args[1], args[2]).filter(|a| self.config.is_world(*a))?;
                let peer = self.config.peer_of(address, None).unwrap_or(Peer::World);
                Some(pending(PointKind::Connect, None, Some(peer), None))
            }
        }
    }

    /// A write or a send: bytes to a file under the data dir, or a request to the world.
    fn classify_send(&mut self, tid: i32, call: Call, args: &[u64; 6]) -> Option<Pending> {
        let bytes = match call {
            Call::Write | Call::Pwrite64 | Call::Sendto => Some(args[2]),
            Call::Sendmsg => msghdr_bytes(tid, args[1]),
            _ => iovec_bytes(tid, args[1], args[2]),
        };
        match self.fd_target(tid, args[0] as i32) {
            FdTarget::Data(path) => {
                let synced = opened_sync(tid, args[0] as i32);
                Some(Pending { synced, ..Pending::new(call, PointKind::Durable, Some(path), None, bytes) })
            }
            FdTarget::World { inode, address } => Some(self.request(tid, call, args, inode, address, bytes)),
            FdTarget::Other => None,
        }
    }

    /// Bytes sent to the world on socket `inode`: the part they go to (named by a request line,
    /// else the socket's last, else the only one at the address), and the exchange they continue.
    fn request(
        &mut self,
        tid: i32,
        call: Call,
        args: &[u64; 6],
        inode: u64,
        address: SocketAddr,
        bytes: Option<u64>,
    ) -> Pending {
        let sent = match call {
            Call::Write | Call::Pwrite64 | Call::Sendto => {
                read_memory(tid, args[1], (args[2] as usize).min(MESSAGE_LIMIT))
            }
            Call::Sendmsg => msghdr_contents(tid, args[1]),
            _ => iovec_contents(tid, args[1], args[2], MESSAGE_LIMIT),
        };
        let named = sent.as_deref().and_then(request_path).and_then(|p| self.config.peer_of(address, Some(p)));
        let peer = named
            .or_else(|| self.last_peer.get(&inode).copied())
            .or_else(|| self.config.peer_of(address, None))
            .unwrap_or(Peer::World);
        self.last_peer.insert(inode, peer);
        let exchange = self.exchanges.entry(inode).or_default();
        if let Some(sent) = &sent {
            exchange.sent(sent);
        }
        exchange.holder = Some((tid, args[0] as i32));
        let request = exchange.request.clone();
        Pending { request, sending: Some(inode), ..Pending::new(call, PointKind::Request, None, Some(peer), bytes) }
    }

    /// A receive from the world (its bytes are read at its exit); any other read is no point.
    fn classify_receive(&mut self, tid: i32, call: Call, args: &[u64; 6]) -> Option<Pending> {
        match self.fd_target(tid, args[0] as i32) {
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
                Some(Pending { receive, ..Pending::new(call, PointKind::Answer, None, Some(peer), bytes) })
            }
            _ => None,
        }
    }

    /// A rename is a point when either name is under the data dir; one that puts a file in
    /// place outside it (its new name) is an escape.
    fn classify_rename(&mut self, tid: i32, call: Call, args: &[u64; 6]) -> Option<Pending> {
        let (from, to) = if call == Call::Rename {
            (resolve_path(tid, libc::AT_FDCWD, args[0]), resolve_path(tid, libc::AT_FDCWD, args[1]))
        } else {
            (resolve_path(tid, args[0] as i32, args[1]), resolve_path(tid, args[2] as i32, args[3]))
        };
        if let Some(to) = &to {
            self.observe_path(tid, call, to.clone());
        }
        let touches = [&from, &to].into_iter().flatten().any(|p| self.config.is_data(p));
        touches.then(|| Pending {
            kind: PointKind::Rename,
            path: from.map(|p| p.display().to_string()),
            to: to.map(|p| p.display().to_string()),
            ..Pending::new(call, PointKind::Rename, None, None, None)
        })
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
                    let address = socket_peer(tid, fd, inode).filter(|a| self.config.is_world(*a));
                    self.sockets.insert(inode, address);
                    address
                }
            };
            return address.map_or(FdTarget::Other, |address| FdTarget::World { inode, address });
        }
        if self.config.is_data(&link) { FdTarget::Data(link.display().to_string()) } else { FdTarget::Other }
    }
}

/// Whether fd `fd` of thread `tid` was opened `O_SYNC` or `O_DSYNC` (its writes are on disk when
/// they return): the `flags:` line of `/proc/<tid>/fdinfo/<fd>`, in octal. Unreadable: not.
fn opened_sync(tid: i32, fd: i32) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{tid}/fdinfo/{fd}")) else { return false };
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).and_then(|f| i64::from_str_radix(f.trim(), 8).ok());
    // O_SYNC includes O_DSYNC's bit (__O_SYNC | O_DSYNC): either means the data is synced.
    flags.is_some_and(|f| f & i64::from(libc::O_DSYNC) != 0)
}
