//! Which address a socket talks to: the one a `connect` names, or the one the kernel's TCP table
//! gives for a socket's inode.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use super::diag::TcpRow;
use super::memory::read_memory;

/// The address a `connect` names, if it is an IPv4 or IPv6 one.
pub(super) fn sockaddr(tid: i32, address: u64, len: u64) -> Option<SocketAddr> {
    let raw = read_memory(tid, address, usize::try_from(len).ok().filter(|&l| l <= 128)?)?;
    self::address(&raw)
}

/// A `struct sockaddr` in bytes, if it is an IPv4 or IPv6 one.
fn address(raw: &[u8]) -> Option<SocketAddr> {
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

/// The remote address of the tracee's TCP socket `fd` (inode `inode`): asked of the socket
/// itself, through a copy of the fd (`pidfd_getfd`, Linux 5.6, allowed to a tracer), else found
/// in the kernel's TCP table by its inode.
pub(super) fn socket_peer(tid: i32, fd: i32, inode: u64) -> Option<SocketAddr> {
    match peer_of_copy(tid, fd) {
        Some(peer) => Some(peer),
        None => find_tcp_row(Some(tid), |row| row.inode == inode).map(|row| row.remote),
    }
}

/// `getpeername` of a copy of thread `tid`'s fd `fd`. `None` where the kernel refuses the copy or
/// the fd is not a connected IPv4 or IPv6 socket.
fn peer_of_copy(tid: i32, fd: i32) -> Option<SocketAddr> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let own = |raw: libc::c_long| (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw as i32) });
    // SAFETY: plain system calls on numbers; each fd returned is owned (and closed) here alone.
    // PIDFD_THREAD (O_EXCL, Linux 6.9): `tid` need not lead its thread group.
    let pidfd = own(unsafe { libc::syscall(libc::SYS_pidfd_open, tid, libc::O_EXCL) })?;
    let copy = own(unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) })?;
    socket_names(copy.as_raw_fd()).map(|(_, peer)| peer)
}

/// The caller's socket `fd`'s own address and its peer's, if it is a connected IPv4 or IPv6 one.
pub fn socket_names(fd: i32) -> Option<(SocketAddr, SocketAddr)> {
    type Getter = unsafe extern "C" fn(libc::c_int, *mut libc::sockaddr, *mut libc::socklen_t) -> libc::c_int;
    let name = |get: Getter| {
        // SAFETY: zeroed bytes are a valid sockaddr_storage.
        let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        // SAFETY: `storage` is writable for `len` bytes, as getsockname(2) and getpeername(2) ask.
        if unsafe { get(fd, (&raw mut storage).cast(), &mut len) } != 0 {
            return None;
        }
        // SAFETY: the kernel wrote `len` bytes of a socket address into `storage`.
        address(unsafe { std::slice::from_raw_parts((&raw const storage).cast::<u8>(), len as usize) })
    };
    Some((name(libc::getsockname)?, name(libc::getpeername)?))
}

/// The first row of the TCP tables of thread `of`'s network namespace (`None`: the caller's),
/// IPv4 then IPv6, that `wanted` takes; sockets in `TIME_WAIT` are not rows (they have no inode
/// and no queued byte). The tracer asks while it holds the runtime, and the tables hold every
/// socket of the machine (thousands in TIME_WAIT after a sweep): they are asked of the kernel
/// through `sock_diag` (`diag`), or, where that is refused or the namespace is not the caller's,
/// read from `/proc/<of>/net/tcp{,6}`, parsed only up to the row wanted. A table that cannot be
/// read gives none.
pub fn find_tcp_row(of: Option<i32>, mut wanted: impl FnMut(&TcpRow) -> bool) -> Option<TcpRow> {
    if same_namespace(of)
        && let Ok(rows) = super::diag::tcp_rows()
    {
        return rows.into_iter().find(|row| wanted(row));
    }
    let net = of.map_or_else(|| "/proc/self/net".to_owned(), |tid| format!("/proc/{tid}/net"));
    ["tcp", "tcp6"].into_iter().find_map(|table| {
        let text = std::fs::read_to_string(format!("{net}/{table}")).ok()?;
        text.lines().skip(1).filter_map(parse_tcp_line).find(|row| row.state != TIME_WAIT && wanted(row))
    })
}

/// `TCP_TIME_WAIT`: a closed connection's leftover, not a row for anyone here.
const TIME_WAIT: u8 = 0x06;

/// Whether thread `of` is in the caller's network namespace (a `sock_diag` socket sees the
/// caller's); `None` is the caller.
fn same_namespace(of: Option<i32>) -> bool {
    let Some(tid) = of else { return true };
    let ours = std::fs::read_link("/proc/self/ns/net");
    ours.is_ok() && ours.ok() == std::fs::read_link(format!("/proc/{tid}/ns/net")).ok()
}

/// One row of /proc/net/tcp{,6}. Addresses are hex words in the kernel's byte order
/// (little-endian on x86_64), ports and queues plain hex.
fn parse_tcp_line(line: &str) -> Option<TcpRow> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let (tx_queue, rx_queue) = fields.get(4)?.split_once(':')?;
    Some(TcpRow {
        local: parse_address(fields.get(1)?)?,
        remote: parse_address(fields.get(2)?)?,
        state: u8::from_str_radix(fields.get(3)?, 16).ok()?,
        tx_queue: u64::from_str_radix(tx_queue, 16).ok()?,
        rx_queue: u64::from_str_radix(rx_queue, 16).ok()?,
        inode: fields.get(9)?.parse().ok()?,
    })
}

/// `0100007F:1F90` is 127.0.0.1:8080; an IPv4-mapped IPv6 address is given as IPv4.
fn parse_address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
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
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_s_peer_is_read_from_a_copy_of_its_fd() {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let server = listener.local_addr().expect("address");
        let client = std::net::TcpStream::connect(server).expect("connect");
        // SAFETY: gettid(2) has no arguments and cannot fail.
        let tid = unsafe { libc::gettid() };
        assert_eq!(peer_of_copy(tid, client.as_raw_fd()), Some(server));
        assert_eq!(peer_of_copy(tid, listener.as_raw_fd()), None, "a listening socket has no peer");
    }

    #[test]
    fn tcp_rows_give_addresses_queues_and_inode() {
        let v4 = "   0: 0100007F:A3F2 0100007F:1F90 01 0000002A:00000010 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1";
        let row = parse_tcp_line(v4).expect("a v4 row");
        assert_eq!(row.local, "127.0.0.1:41970".parse().unwrap());
        assert_eq!(row.remote, "127.0.0.1:8080".parse().unwrap());
        assert_eq!((row.state, row.tx_queue, row.rx_queue, row.inode), (1, 42, 16, 4242));
        let v6 = "   0: 0000000000000000FFFF00000100007F:A3F2 0000000000000000FFFF00000100007F:0050 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1";
        let row = parse_tcp_line(v6).expect("a v6 row");
        assert_eq!((row.remote, row.state, row.inode), ("127.0.0.1:80".parse().unwrap(), TcpRow::LISTEN, 77));
    }
}
