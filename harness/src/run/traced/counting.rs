//! Where a point stands in its incarnation's counts: the addresses a `[[syscall_fault]]` may
//! name (CONTRACT.md section 7), counted as the tracer reports the points.

use crate::scenario::Anchor;
use crate::tracer::{Point, PointKind, When};
use std::collections::HashMap;

/// Points counted by (kind, when).
type Counts = HashMap<(PointKind, When), u32>;

/// One incarnation's counts of (kind, when) from the ready line, and from the last boundary
/// reached.
#[derive(Default)]
pub(super) struct Counting {
    from_ready: Counts,
    since: Option<(Anchor, Counts)>,
    /// From the last delivery attempt answered, which starts no other count again.
    since_delivery: Option<(Anchor, Counts)>,
    /// Exchange points by the operation their request names, from the ready line.
    by_operation: HashMap<(String, PointKind, When), u32>,
}

/// Where a point stands in its incarnation's counts.
pub(super) struct Counted {
    /// Its occurrence from the ready line.
    pub(super) from_ready: u32,
    /// The last boundary this incarnation reached, if any.
    pub(super) anchor: Option<Anchor>,
    /// Its occurrence from `anchor` (from the ready line without one).
    pub(super) occurrence: u32,
    /// The last delivery attempt answered since then, and its occurrence from it.
    pub(super) delivery: Option<(Anchor, u32)>,
    /// On an exchange whose request names an operation: it, and the point's occurrence for it.
    pub(super) exchange: Option<(String, u32)>,
}

impl Counting {
    pub(super) fn count(&mut self, point: &Point) -> Counted {
        let key = (point.kind, point.when);
        let from_ready_count = {
            let count = self.from_ready.entry(key).or_default();
            *count += 1;
            *count
        };
        let since = |counting: &mut Option<(Anchor, Counts)>| {
            counting.as_mut().map(|(anchor, counts)| {
                let count = counts.entry(key).or_default();
                *count += 1;
                (anchor.clone(), *count)
            })
        };
        let (anchor, occurrence) = match since(&mut self.since) {
            Some((anchor, count)) => (Some(anchor), count),
            None => (None, from_ready_count),
        };
        let delivery = since(&mut self.since_delivery);
        let exchange = matches!(point.kind, PointKind::Request | PointKind::Answer)
            .then(|| point.request.as_ref()?.operation())
            .flatten()
            .map(|op| {
                let count = self.by_operation.entry((op.to_owned(), point.kind, point.when)).or_default();
                *count += 1;
                (op.to_owned(), *count)
            });
        Counted { from_ready: from_ready_count, anchor, occurrence, delivery, exchange }
    }

    /// The boundaries `point` reached start their counts again: a boundary's, every count; a
    /// delivery attempt's, its own.
    pub(super) fn reached(&mut self, boundaries: &[Anchor]) {
        if let Some(last) = boundaries.iter().rev().find(|a| !a.is_delivery()) {
            self.since = Some((last.clone(), HashMap::new()));
            self.since_delivery = None;
        }
        if let Some(last) = boundaries.iter().rev().find(|a| a.is_delivery()) {
            self.since_delivery = Some((last.clone(), HashMap::new()));
        }
    }
}
