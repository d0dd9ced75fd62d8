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
    ["tcp", "tcp6"].into_iter().find_map(|table| {
        let text = std::fs::read_to_string(format!("/proc/{tid}/net/{table}")).ok()?;
        text.lines().skip(1).find_map(|line| parse_tcp_line(line).filter(|(i, _)| *i == inode).map(|(_, a)| a))
    })
}

/// One row of /proc/net/tcp{,6}: (inode, remote address). Addresses are hex words in the
/// kernel's byte order (little-endian on x86_64), ports plain hex.
fn parse_tcp_line(line: &str) -> Option<(u64, SocketAddr)> {
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
    fn tcp_rows_give_inode_and_peer() {
        let v4 = "   0: 0100007F:A3F2 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 20 4 30 10 -1";
        assert_eq!(parse_tcp_line(v4), Some((4242, "127.0.0.1:8080".parse().unwrap())));
        let v6 = "   0: 0000000000000000FFFF00000100007F:A3F2 0000000000000000FFFF00000100007F:0050 01 00000000:00000000 00:00000000 00000000  1000        0 77 1";
        assert_eq!(parse_tcp_line(v6), Some((77, "127.0.0.1:80".parse().unwrap())));
    }
}
