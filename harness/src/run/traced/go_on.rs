//! Points the harness has nothing left to decide at are told, not asked: once every fault the
//! tracer could fire has fired (every `[[syscall_fault]]` hit, every boundary it reaches for the
//! driver hit) and no crash state is built, no sync copied for a power loss and no schedule run,
//! each of an incarnation's points after its ready line would only be answered `resume`. The
//! harness then answers `{"action":"go_on"}` once, and the tracer stops waiting for answers (its
//! `channel`): the runtime's threads no longer sit at every traced call while the harness reads the
//! point and writes back. The harness still reads every point, in order, as it comes: the counts,
//! the requests sent and the points seen are the same; a kill's after-kill state waits for the
//! tracer's last line (`Tracing::drained`) as before.
//!
//! Where it pays: a case `killpoint explore` re-runs from the start with a kill the world or the
//! client holds, traced to keep the crash state the kill leaves, whose prefix otherwise waited on
//! the harness at every call.

use super::{Shared, Tracing};

const RESUME: &[u8] = b"{\"action\":\"resume\"}\n";
const GO_ON: &[u8] = b"{\"action\":\"go_on\"}\n";

impl Tracing {
    /// The driver armed every fault where it fires (`run::driver::arming`): from now on, "nothing
    /// left to decide" can be told from the faults' hits. Until then a fault not armed yet would
    /// look fired.
    pub fn faults_armed(&self) {
        self.shared.lock().armed = true;
    }
}

/// Whether one incarnation's tracer was told `go_on`.
#[derive(Debug, Default)]
pub(super) struct Told(bool);

impl Told {
    /// What the harness answers a point it resumes, the incarnation ready or not (`ready`):
    /// `resume`, or once `go_on` when it has nothing left to decide; nothing once that was said.
    pub(super) fn resume_line(&mut self, shared: &Shared, ready: bool) -> Option<&'static [u8]> {
        if self.0 {
            return None;
        }
        // Before the ready line a point is not counted; one told later could pass for one after.
        if ready && nothing_to_decide(shared) {
            self.0 = true;
            return Some(GO_ON);
        }
        Some(RESUME)
    }
}

fn nothing_to_decide(shared: &Shared) -> bool {
    if shared.hook.get().is_some() || shared.power_loss.is_some() || shared.turn.is_some() {
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

    fn answers(tracing: &Tracing, ready: bool, told: &mut Told) -> Option<&'static [u8]> {
        told.resume_line(&tracing.shared, ready)
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
