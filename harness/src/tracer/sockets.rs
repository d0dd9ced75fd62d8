//! Which address a socket talks to: the one a `connect` names, or the one the kernel's TCP table
//! gives for a socket's inode.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

use super::memory::read_memory;

/// The address a `connect` names, if it is an IPv4 or IPv6 one.
pub(super) fn sockaddr(tid: i32, address: u64, len: u64) -> Option<SocketAddr> {
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
pub(super) fn socket_peer(tid: i32, inode: u64) -> Option<SocketAddr> {
    find_tcp_row(&format!("/proc/{tid}/net"), |row| row.inode == inode).map(|row| row.remote)
}

/// One row of the kernel's TCP table (`/proc/net/tcp` and `tcp6`).
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

/// The first row of the TCP tables under `net` (`/proc/self/net`, `/proc/<tid>/net`), IPv4 then
/// IPv6, that `wanted` takes. Rows are parsed only up to it, and the IPv6 table is read only when
/// the IPv4 one has none: the tables hold every socket of the machine (thousands in TIME_WAIT
/// after a sweep), and the tracer asks while it holds the runtime. A table that cannot be read
/// gives none.
pub fn find_tcp_row(net: &str, mut wanted: impl FnMut(&TcpRow) -> bool) -> Option<TcpRow> {
    ["tcp", "tcp6"].into_iter().find_map(|table| {
        let text = std::fs::read_to_string(format!("{net}/{table}")).ok()?;
        text.lines().skip(1).filter_map(parse_tcp_line).find(|row| wanted(row))
    })
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
