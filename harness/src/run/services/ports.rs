//! The loopback ports a service is told to bind. A service binds where the harness says (a server
//! with an API, an admin API and a port between its nodes binds three), so the harness picks ports
//! that are free, lets them go, and the service binds them a moment later — and again after each
//! restart of the service. In between, anyone may take one. The outgoing connections of every
//! process on the machine take their source ports from the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`), and a busy test run makes thousands of them; so
//! the harness picks below that range, at random, where only another explicit bind can land.

use super::PortName;
use std::net::TcpListener;
use std::ops::Range;

/// Where ports are picked when the ephemeral range starts above it: above the well-known and the
/// usual fixed ports of servers (8080, 5432, 7233 …).
const LOWEST: u16 = 10_000;

/// How many random ports are tried for one before it is taken from the ephemeral range after all.
const TRIES: usize = 64;

/// The ports the harness picked for one service: its own, and one per name it declared. Kept
/// across a `[[service_fault]]`, so that the worker's variables stay true.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ports {
    pub main: u16,
    pub named: Vec<(PortName, u16)>,
}

impl Ports {
    /// Free ports on 127.0.0.1 for `names` besides the main one, all distinct: each listener is
    /// held until every port is picked.
    pub fn pick(names: &[PortName]) -> std::io::Result<Ports> {
        let below = outside_ephemeral();
        let mut held: Vec<TcpListener> = Vec::new();
        for _ in 0..=names.len() {
            held.push(free(below.clone())?);
        }
        let mut ports = held.iter().map(|l| l.local_addr().map(|a| a.port()));
        let main = ports.next().expect("one port at least")?;
        let named = names.iter().cloned().zip(ports).map(|(n, p)| p.map(|p| (n, p))).collect::<Result<_, _>>()?;
        Ok(Ports { main, named })
    }
}

/// A listener on a free port of `range`, tried at random; on one of the kernel's choosing when
/// the range is empty or full.
fn free(range: Range<u16>) -> std::io::Result<TcpListener> {
    if !range.is_empty() {
        for _ in 0..TRIES {
            if let Ok(listener) = TcpListener::bind(("127.0.0.1", fastrand::u16(range.clone()))) {
                return Ok(listener);
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
}

/// The ports from [`LOWEST`] up to the kernel's ephemeral range; empty where it cannot be read
/// (not Linux) or starts lower.
fn outside_ephemeral() -> Range<u16> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let low = range.split_whitespace().next().and_then(|low| low.parse::<u16>().ok());
    LOWEST..low.unwrap_or(LOWEST).max(LOWEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_distinct_ports_below_the_ephemeral_range() {
        let names = [PortName::new("admin").unwrap(), PortName::new("node").unwrap()];
        let ports = Ports::pick(&names).unwrap();
        let mut all: Vec<u16> = ports.named.iter().map(|(_, p)| *p).chain([ports.main]).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 3, "expected three distinct ports, found {ports:?}");
        let below = outside_ephemeral();
        if !below.is_empty() {
            assert!(all.iter().all(|p| below.contains(p)), "expected every port in {below:?}, found {all:?}");
        }
        let names: Vec<&str> = ports.named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["admin", "node"]);
    }
}
