//! The kernel's TCP table through `sock_diag` netlink (sock_diag(7)): the rows of
//! `/proc/net/tcp{,6}`, but with the sockets in `TIME_WAIT` left out by the kernel and nothing
//! formatted as text.
//!
//! Why not the `/proc` files: they hold every TCP socket of the network namespace, and a run
//! leaves thousands in `TIME_WAIT` (every loopback connection closed in the last minute); the
//! kernel prints each as a line for every read. Reading them was 40 % of the CPU of an explore of
//! `concurrent_wave` (the tracer's lookup of a socket's peer, the harness's look for an answer on
//! its way). A socket in `TIME_WAIT` has no inode and no queued byte, so leaving it out changes
//! no answer anyone asks of the table.
//!
//! Hand-written over `libc` rather than the rust-netlink crates: two fixed-layout structs of
//! `linux/inet_diag.h`, one request per address family, against three more crates in every cold
//! build of the suite.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One row of the kernel's TCP table (`/proc/net/tcp` and `tcp6`, or `sock_diag`'s `inet_diag_msg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRow {
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// The kernel's `TCP_*` state number (`0x0A`: listening).
    pub state: u8,
    /// Bytes sent and not yet acknowledged by the peer.
    pub tx_queue: u64,
    /// Bytes received and not yet read by the socket's owner (for a listening socket: the
    /// connections waiting to be accepted).
    pub rx_queue: u64,
    pub inode: u64,
}

impl TcpRow {
    pub const LISTEN: u8 = 0x0A;
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `TCP_TIME_WAIT`, the state left out.
const TIME_WAIT: u32 = 6;
/// Every TCP state (1 to 12) but `TIME_WAIT`.
const STATES: u32 = 0x1ffe & !(1 << TIME_WAIT);
const HEADER: usize = 16;
const REQUEST: usize = 56;
const MESSAGE: usize = 72;

/// Every TCP socket of the caller's network namespace but those in `TIME_WAIT`, IPv4 then IPv6.
/// The kernel walks its whole table for this, buckets and all: for one connection, [`tcp_row`].
pub(super) fn tcp_rows() -> std::io::Result<Vec<TcpRow>> {
    let socket = diag_socket()?;
    let mut rows = Vec::new();
    for (seq, family) in [(1, libc::AF_INET), (2, libc::AF_INET6)] {
        send(&socket, seq, family as u8, None)?;
        receive(&socket, seq, true, &mut rows)?;
    }
    Ok(rows)
}

/// The TCP socket whose own address is `local` and whose peer is `remote`, if there is one (in
/// the caller's network namespace): a lookup in the kernel's hash, not a walk of the table.
pub fn tcp_row(local: SocketAddr, remote: SocketAddr) -> std::io::Result<Option<TcpRow>> {
    let socket = diag_socket()?;
    let family = if local.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    send(&socket, 1, family as u8, Some((local, remote)))?;
    let mut rows = Vec::new();
    match receive(&socket, 1, false, &mut rows) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(None),
        Err(e) => Err(e),
        Ok(()) => Ok(rows.pop()),
    }
}

fn diag_socket() -> std::io::Result<OwnedFd> {
    // SAFETY: a plain socket(2) call; its result is checked before use.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::NETLINK_SOCK_DIAG) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned here alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One request: `nlmsghdr` and `inet_diag_req_v2` (TCP, every state but `TIME_WAIT`): a dump,
/// or, with `exact`, the one socket of that address and peer.
fn send(socket: &OwnedFd, seq: u32, family: u8, exact: Option<(SocketAddr, SocketAddr)>) -> std::io::Result<()> {
    let mut request = [0u8; HEADER + REQUEST];
    let flags = if exact.is_some() { libc::NLM_F_REQUEST } else { libc::NLM_F_REQUEST | libc::NLM_F_DUMP };
    request[0..4].copy_from_slice(&((HEADER + REQUEST) as u32).to_ne_bytes());
    request[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    request[6..8].copy_from_slice(&(flags as u16).to_ne_bytes());
    request[8..12].copy_from_slice(&seq.to_ne_bytes());
    request[HEADER] = family;
    request[HEADER + 1] = libc::IPPROTO_TCP as u8;
    request[HEADER + 4..HEADER + 8].copy_from_slice(&STATES.to_ne_bytes());
    if let Some((local, remote)) = exact {
        // inet_diag_sockid: ports big-endian, addresses in network order, no interface, and
        // INET_DIAG_NOCOOKIE (any socket of that address pair).
        let id = &mut request[HEADER + 8..HEADER + REQUEST];
        id[0..2].copy_from_slice(&local.port().to_be_bytes());
        id[2..4].copy_from_slice(&remote.port().to_be_bytes());
        let ip = |ip: IpAddr| -> [u8; 16] {
            let mut bytes = [0u8; 16];
            match ip {
                IpAddr::V4(v4) => bytes[0..4].copy_from_slice(&v4.octets()),
                IpAddr::V6(v6) => bytes = v6.octets(),
            }
            bytes
        };
        id[4..20].copy_from_slice(&ip(local.ip()));
        id[20..36].copy_from_slice(&ip(remote.ip()));
        id[40..48].copy_from_slice(&[0xff; 8]);
    }
    // SAFETY: the buffer is valid for its length; the kernel is the netlink peer (no address).
    let sent = unsafe { libc::send(socket.as_raw_fd(), request.as_ptr().cast(), request.len(), 0) };
    if sent < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// The answer's messages, each `inet_diag_msg` a row: a dump's until `NLMSG_DONE`, an exact
/// request's one.
fn receive(socket: &OwnedFd, seq: u32, dump: bool, rows: &mut Vec<TcpRow>) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: the buffer is valid and writable for its length.
        let n = unsafe { libc::recv(socket.as_raw_fd(), buffer.as_mut_ptr().cast(), buffer.len(), 0) };
        if n < 0 {
            let error = std::io::Error::last_os_error();
            if error.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(error);
        }
        let mut at = 0;
        let n = n as usize;
        while at + HEADER <= n {
            let length = u32::from_ne_bytes(buffer[at..at + 4].try_into().expect("4 bytes")) as usize;
            let kind = u16::from_ne_bytes(buffer[at + 4..at + 6].try_into().expect("2 bytes"));
            let this_seq = u32::from_ne_bytes(buffer[at + 8..at + 12].try_into().expect("4 bytes"));
            if length < HEADER || at + length > n {
                return Err(std::io::Error::other(format!("a sock_diag message of {length} bytes at {at} of {n}")));
            }
            let body = &buffer[at + HEADER..at + length];
            match kind as i32 {
                _ if this_seq != seq => {}
                libc::NLMSG_DONE => return Ok(()),
                libc::NLMSG_ERROR => {
                    let errno = body.get(0..4).map_or(0, |b| i32::from_ne_bytes(b.try_into().expect("4 bytes")));
                    return Err(std::io::Error::from_raw_os_error(-errno));
                }
                _ => {
                    rows.extend(row(body));
                    if !dump {
                        return Ok(());
                    }
                }
            }
            at += (length + 3) & !3;
        }
    }
}

/// One `inet_diag_msg`: family, state, then the socket's id (ports big-endian, addresses in
/// network order), then the queues and the inode.
fn row(body: &[u8]) -> Option<TcpRow> {
    if body.len() < MESSAGE {
        return None;
    }
    let word = |at: usize| u32::from_ne_bytes(body[at..at + 4].try_into().expect("4 bytes"));
    let port = |at: usize| u16::from_be_bytes([body[at], body[at + 1]]);
    let ip = |at: usize| -> IpAddr {
        match body[0] as i32 {
            libc::AF_INET => Ipv4Addr::from(<[u8; 4]>::try_from(&body[at..at + 4]).expect("4 bytes")).into(),
            _ => {
                let ip = Ipv6Addr::from(<[u8; 16]>::try_from(&body[at..at + 16]).expect("16 bytes"));
                ip.to_ipv4_mapped().map_or(ip.into(), Into::into)
            }
        }
    };
    Some(TcpRow {
        local: SocketAddr::new(ip(8), port(4)),
        remote: SocketAddr::new(ip(24), port(6)),
        state: body[1],
        rx_queue: u64::from(word(56)),
        tx_queue: u64::from(word(60)),
        inode: u64::from(word(68)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_and_a_connection_are_rows_with_their_inodes() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (_server, _) = listener.accept().expect("accept");
        let rows = tcp_rows().expect("sock_diag answers");
        let inode = |fd: i32| {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("fd link");
            let link = link.to_string_lossy().into_owned();
            link.trim_start_matches("socket:[").trim_end_matches(']').parse::<u64>().expect("a socket inode")
        };
        let listening = rows.iter().find(|r| r.local.port() == port && r.state == TcpRow::LISTEN);
        assert_eq!(listening.map(|r| r.inode), Some(inode(listener.as_raw_fd())), "{rows:?}");
        let local = client.local_addr().expect("address");
        let connected = rows.iter().find(|r| r.local == local).expect("the client's row");
        assert_eq!(connected.remote, SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!((connected.state, connected.inode), (1, inode(client.as_raw_fd())));
        let one = tcp_row(local, connected.remote).expect("sock_diag answers").expect("the client's row");
        assert_eq!(one, *connected);
        let unknown = SocketAddr::from(([127, 0, 0, 1], 1));
        assert_eq!(tcp_row(local, unknown).expect("sock_diag answers"), None, "no such connection");
    }
}
