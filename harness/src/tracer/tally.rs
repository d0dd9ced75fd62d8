//! What the tracer saw, counted: the one line it prints at exit when no harness is listening.

use std::collections::HashMap;

use super::point::PointKind;

/// Counts of what the tracer saw, printed at exit when there is no trace socket.
#[derive(Debug, Default)]
pub struct Tally {
    /// Every seccomp stop, interesting or not: the cost of tracing.
    pub stops: u64,
    pub points: HashMap<PointKind, u64>,
}

impl Tally {
    pub fn summary(&self) -> String {
        let durable: u64 = self.points.iter().filter(|(k, _)| k.is_durable()).map(|(_, n)| n).sum();
        let network: u64 = self.points.iter().filter(|(k, _)| !k.is_durable()).map(|(_, n)| n).sum();
        let kinds: Vec<String> = PointKind::ALL
            .into_iter()
            .map(|kind| format!("{} {}", kind.name(), self.points.get(&kind).copied().unwrap_or(0)))
            .collect();
        format!(
            "killpoint-tracer: {} crash points ({durable} durable, {network} network: {}); {} syscall stops",
            durable + network,
            kinds.join(", "),
            self.stops
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_durable_and_network_points() {
        let mut tally = Tally { stops: 9, ..Tally::default() };
        tally.points.insert(PointKind::Durable, 4);
        tally.points.insert(PointKind::Request, 2);
        assert_eq!(
            tally.summary(),
            "killpoint-tracer: 6 crash points (4 durable, 2 network: durable 4, sync 0, rename 0, unlink 0, \
             connect 0, request 2, answer 0); 9 syscall stops"
        );
    }
}
