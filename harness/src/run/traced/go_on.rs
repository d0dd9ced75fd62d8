//! Points the harness has nothing left to decide at are told, not asked: once every fault the
//! tracer could fire has fired (every `[[syscall_fault]]` hit, every boundary it reaches for the
//! driver hit) and no sync is copied for a power loss and no schedule run, each of an
//! incarnation's points after its ready line would only be answered `resume`. The harness then
//! answers `{"action":"go_on"}` once, and the tracer stops waiting for answers (its `channel`):
//! the runtime's threads no longer sit at every traced call while the harness reads the point and
//! writes back. The harness still reads every point, in order, as it comes: the counts, the
//! requests sent and the points seen are the same; a kill's after-kill state waits for the
//! tracer's last line (`Tracing::drained`) as before.
//!
//! Where crash states are built (a `PointHook`), the harness still holds the runtime at each
//! explored point (`PointKind::explored`), and nowhere else: it answers
//! `{"action":"go_on","ask":"explored"}`, and the tracer tells the other points (writes between
//! syncs, connects, a request's `after`, an answer's `before`) without waiting: the 16 depth-1
//! cases of an `after_submit` exploration at depth 2, each building its recovery's states, took
//! 393 ms at `--jobs 1` against 430 asked at every point.
//!
//! Where it pays: a case `killpoint explore` re-runs from the start with a kill the world or the
//! client holds, traced to keep the crash state the kill leaves, whose prefix otherwise waited on
//! the harness at every call; and every run that builds crash states.

use super::{Shared, Tracing};
use crate::tracer::{Asking, Point};

const RESUME: &[u8] = b"{\"action\":\"resume\"}\n";
const GO_ON: &[u8] = b"{\"action\":\"go_on\"}\n";
const GO_ON_EXPLORED: &[u8] = b"{\"action\":\"go_on\",\"ask\":\"explored\"}\n";

impl Tracing {
    /// The driver armed every fault where it fires (`run::driver::arming`): from now on, "nothing
    /// left to decide" can be told from the faults' hits. Until then a fault not armed yet would
    /// look fired.
    pub fn faults_armed(&self) {
        self.shared.lock().armed = true;
    }
}

/// Which points one incarnation's tracer waits for an answer at, as it was told.
#[derive(Debug, Default)]
pub(super) struct Told(Asking);

impl Told {
    /// Whether the tracer waits for the harness's answer at `point`.
    pub(super) fn asks(&self, point: &Point) -> bool {
        self.0.asks(point.kind, point.when)
    }

    /// What the harness answers `point`, which it resumes, the incarnation ready or not
    /// (`ready`): `resume`, or once `go_on` (with `"ask":"explored"` while crash states are
    /// built) when it has nothing else left to decide; nothing at a point the tracer only told.
    pub(super) fn resume_line(&mut self, shared: &Shared, ready: bool, point: &Point) -> Option<&'static [u8]> {
        if !self.asks(point) {
            return None;
        }
        // Before the ready line a point is not counted; one told later could pass for one after.
        if self.0 == Asking::Every && ready && spent(shared) {
            let (asks, line) =
                if shared.hook.get().is_some() { (Asking::Explored, GO_ON_EXPLORED) } else { (Asking::Never, GO_ON) };
            self.0 = asks;
            return Some(line);
        }
        Some(RESUME)
    }
}

/// Whether nothing but a crash state's capture is left to decide at this incarnation's points:
/// every fault armed and hit, no power loss to copy syncs for, no schedule to run.
fn spent(shared: &Shared) -> bool {
    if shared.power_loss.is_some() || shared.turn.is_some() {
        return false;
    }
    let state = shared.lock();
    state.armed && state.hits.iter().all(|hit| *hit) && state.boundary_faults.iter().all(|(_, hit)| *hit)
}

#[cfg(test)]
mod tests {
    use super::super::BoundaryFault;
    use super::*;
    use crate::model::boundary::Boundary;
    use crate::scenario::{Anchor, Scenario};

    fn tracing(syscall_faults: &str) -> (tempfile::TempDir, Tracing) {
        let text = format!(
            "description = \"d\"\n[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\nexpect = \"succeeded\"\n{syscall_faults}"
        );
        let scenario = Scenario::parse(std::path::Path::new("go_on.toml"), &text).expect("valid");
        let dir = tempfile::tempdir().expect("a temp dir");
        let (tracing, _) = Tracing::new(&dir.path().join("trace.sock"), scenario.syscall_faults, None).expect("bound");
        (dir, tracing)
    }

    /// A point of `kind` (`sync`, `durable`…), `when` (`before`, `after`), as the tracer sends it.
    fn point(kind: &str, when: &str) -> Point {
        let line = format!(r#"{{"n":1,"when":"{when}","call":"call","kind":"{kind}","tid":1}}"#);
        serde_json::from_str(&line).expect("a point")
    }

    fn answers(tracing: &Tracing, ready: bool, told: &mut Told) -> Option<&'static [u8]> {
        told.resume_line(&tracing.shared, ready, &point("sync", "before"))
    }

    /// A hook that builds nothing: its presence is what the tracer is told about.
    struct Building;
    impl super::super::PointHook for Building {
        fn held<'a>(
            &'a self,
            _: super::super::HeldPoint<'a>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
            Box::pin(async {})
        }
    }

    /// While crash states are built, the explored points stay asked, and only they.
    #[tokio::test(flavor = "current_thread")]
    async fn while_states_are_built_go_on_keeps_the_explored_points_asked() {
        let (_dir, tracing) = tracing("");
        tracing.hold_with(std::sync::Arc::new(Building));
        tracing.faults_armed();
        let mut told = Told::default();
        let write = point("durable", "before");
        assert_eq!(told.resume_line(&tracing.shared, true, &write), Some(GO_ON_EXPLORED));
        assert!(!told.asks(&write), "a write between syncs is told");
        assert_eq!(told.resume_line(&tracing.shared, true, &write), None);
        for (kind, when) in [("sync", "before"), ("sync", "after"), ("request", "before"), ("answer", "after")] {
            let explored = point(kind, when);
            assert!(told.asks(&explored), "{kind} {when} is asked");
            assert_eq!(told.resume_line(&tracing.shared, true, &explored), Some(RESUME), "{kind} {when}");
        }
        for (kind, when) in [("request", "after"), ("connect", "before")] {
            assert_eq!(told.resume_line(&tracing.shared, true, &point(kind, when)), None, "{kind} {when} is told");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn go_on_is_said_once_every_fault_is_armed_and_spent_and_the_incarnation_is_ready() {
        let (_dir, tracing) = tracing("");
        let mut told = Told::default();
        assert_eq!(answers(&tracing, true, &mut told), Some(RESUME), "faults not armed yet");
        tracing.faults_armed();
        assert_eq!(answers(&tracing, false, &mut told), Some(RESUME), "before the ready line");
        assert_eq!(answers(&tracing, true, &mut told), Some(GO_ON));
        assert_eq!(answers(&tracing, true, &mut told), None, "said once; the tracer no longer waits");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_fault_the_tracer_may_still_fire_keeps_every_point_asked() {
        let (_dir, syscall) = tracing("[[syscall_fault]]\nkind = \"sync\"\nwhen = \"before\"\noccurrence = 1\n");
        syscall.faults_armed();
        assert_eq!(answers(&syscall, true, &mut Told::default()), Some(RESUME), "a [[syscall_fault]] not hit");

        let (_dir, boundary) = tracing("");
        let at = Anchor::at(Boundary::AfterProviderSuccess, "charge".to_owned(), 1);
        boundary.arm_boundaries(vec![BoundaryFault { index: 0, at, freeze: false }]);
        boundary.faults_armed();
        assert_eq!(
            answers(&boundary, true, &mut Told::default()),
            Some(RESUME),
            "a boundary the tracer reaches, not hit"
        );
    }
}
