//! Whether an answer of the runtime's API can still be on its way to the harness: bytes the
//! runtime sent that the harness has not read, seen in the kernel's TCP table.
//!
//! While the tracer holds the runtime at a point, every thread of it stops at its next traced
//! call, and every send is one: nothing new can be sent. An answer sent before the point is then
//! either unacknowledged on the runtime's side of its connection (the loopback has not carried
//! it yet), or unread on the harness's side, or read, and its mark follows once the driver has
//! had its turn. When neither side holds a byte, a submission with no answer marked had none
//! sent: a kill at the point leaves it unanswered, and a built state can say so.
//!
//! The harness's own connections to the API are found among its own fds, and the runtime's side
//! of each is looked up in the kernel's hash by its address pair: a walk of the whole table
//! (thousands of `TIME_WAIT` sockets) at each look, every millisecond while a submission is in
//! flight, was a fifth of an explore's CPU.

use crate::tracer::{TcpRow, find_tcp_row, socket_names, tcp_row};
use std::net::SocketAddr;

/// Whether no connection to the API at `port` (127.0.0.1, the harness's client and the
/// runtime's side of it) holds a byte the runtime sent and the harness has not read.
pub fn nothing_on_the_way(port: u16) -> bool {
    let looked_up = own_connections(port).and_then(|connections| {
        let mut any = false;
        for (fd, local, api) in connections {
            let runtime_sent = tcp_row(api, local).ok()?.is_some_and(|row| on_the_way(&row, port));
            any |= unread(fd) > 0 || runtime_sent;
        }
        Some(!any)
    });
    // Where the kernel will not be asked so (no `/proc/self/fd`, no sock_diag), the table.
    looked_up.unwrap_or_else(|| find_tcp_row(None, |row| on_the_way(row, port)).is_none())
}

/// Whether bytes the harness sent wait unread in the runtime's side of one of its connections to
/// the API at `port` (127.0.0.1): a request the runtime has, accepted or not, and has not read.
pub fn request_waiting(port: u16) -> bool {
    own_connections(port).unwrap_or_default().into_iter().any(|(_, local, api)| {
        tcp_row(api, local).ok().flatten().is_some_and(|row| row.state != TcpRow::LISTEN && row.rx_queue > 0)
    })
}

/// This process's TCP connections to 127.0.0.1:`port`: each fd, its own address and the API's.
/// `None` where `/proc/self/fd` cannot be listed.
fn own_connections(port: u16) -> Option<Vec<(i32, SocketAddr, SocketAddr)>> {
    let api = SocketAddr::from(([127, 0, 0, 1], port));
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    let fds = fds.flatten().filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok());
    Some(
        fds.filter_map(|fd| socket_names(fd).filter(|(_, peer)| *peer == api).map(|(local, peer)| (fd, local, peer)))
            .collect(),
    )
}

/// Bytes received on the caller's socket `fd` and not read yet (`FIONREAD`); 0 if it cannot say.
fn unread(fd: i32) -> libc::c_int {
    let mut bytes: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer given.
    let asked = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut bytes) };
    if asked == 0 { bytes } else { 0 }
}

fn on_the_way(row: &TcpRow, port: u16) -> bool {
    if row.state == TcpRow::LISTEN {
        return false;
    }
    let runtime_sent = row.local.port() == port && row.tx_queue > 0;
    let harness_unread = row.remote.port() == port && row.rx_queue > 0;
    runtime_sent || harness_unread
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(local: &str, remote: &str, state: u8, tx_queue: u64, rx_queue: u64) -> TcpRow {
        TcpRow { local: local.parse().unwrap(), remote: remote.parse().unwrap(), state, tx_queue, rx_queue, inode: 1 }
    }

    #[test]
    fn only_bytes_from_the_api_to_the_harness_are_on_the_way() {
        let api = 8080;
        // The runtime's side, sent and not acknowledged; the harness's side, received and unread.
        assert!(on_the_way(&row("127.0.0.1:8080", "127.0.0.1:50000", 1, 120, 0), api));
        assert!(on_the_way(&row("127.0.0.1:50000", "127.0.0.1:8080", 1, 0, 120), api));
        // The harness's request not yet read by the runtime, or acknowledged: nothing for it.
        assert!(!on_the_way(&row("127.0.0.1:8080", "127.0.0.1:50000", 1, 0, 300), api));
        assert!(!on_the_way(&row("127.0.0.1:50000", "127.0.0.1:8080", 1, 300, 0), api));
        // Connections waiting to be accepted, and other ports.
        assert!(!on_the_way(&row("127.0.0.1:8080", "0.0.0.0:0", TcpRow::LISTEN, 0, 2), api));
        assert!(!on_the_way(&row("127.0.0.1:9090", "127.0.0.1:50001", 1, 120, 0), api));
    }

    #[test]
    fn a_request_waits_in_the_runtime_s_socket_before_it_is_accepted_and_until_it_is_read() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        assert!(!request_waiting(port), "nothing sent yet");
        client.write_all(b"POST /operations HTTP/1.1\r\n\r\n").expect("the request");
        assert!(request_waiting(port), "sent on a connection the runtime has not accepted: it has it, unread");
        let (mut api, _) = listener.accept().expect("accept");
        assert!(request_waiting(port), "accepted, not read");
        let mut read = [0u8; 64];
        assert_eq!(api.read(&mut read).expect("read the request"), 29);
        assert!(!request_waiting(port), "read");
    }

    #[test]
    fn an_unread_answer_on_a_real_connection_is_on_the_way_until_read() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        assert!(nothing_on_the_way(port), "a fresh connection holds nothing");
        server.write_all(b"HTTP/1.1 202 Accepted\r\n\r\n").expect("answer");
        assert!(!nothing_on_the_way(port), "an answer written and not read is on its way");
        let mut read = [0u8; 64];
        let n = client.read(&mut read).expect("read the answer");
        assert_eq!(n, 25);
        // The harness's read makes the kernel acknowledge it (a delayed ACK may take a moment):
        // wait for it, on the table, with a deadline.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !nothing_on_the_way(port) {
            assert!(std::time::Instant::now() < deadline, "the read answer was still on its way after 5 s");
            std::thread::yield_now();
        }
    }
}
