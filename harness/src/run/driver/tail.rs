//! The end of the workload: the harness's own requests once every operation has settled — the
//! malformed submissions, the final reads, the monitoring signals.
//!
//! A runtime may keep writing after its operations settled (an engine's own bookkeeping, a sync
//! after it answered a status read), so a crash point can fall here. It interrupts the harness's
//! requests, not the runtime's work: the runtime is restarted as after any kill, what had settled
//! settles again under the new incarnation, and the requests are made again of it. An answer cut
//! off by the kill is never recorded, so the harness's interrupted read is never held against the
//! runtime; what the restarted runtime answers is judged like any other.

use super::settle::settle;
use super::state::{Driver, unless_reached};
use crate::run::client::{OperationReport, ReadError, Resubmission};
use crate::run::incarnation::Launch;
use crate::scenario::Operation;
use fake_tool::KillPoint;
use std::collections::BTreeMap;
use tokio::sync::mpsc::UnboundedReceiver;

/// The runtime's final word on every operation, and its monitoring signals (when it serves them).
#[derive(Default)]
pub(super) struct LastWord {
    pub(super) reports: BTreeMap<String, OperationReport>,
    pub(super) metrics: Option<Result<String, String>>,
}

/// The requests of the workload's end, made again of a restarted runtime as often as a crash
/// point cuts them off (each syscall fault fires once: the loop ends).
pub(super) async fn finish(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut UnboundedReceiver<KillPoint>,
    unsettled: &mut Vec<(String, String)>,
) -> Result<LastWord, String> {
    let mut malformed = driver.malformed_submissions;
    loop {
        // Once per run, when the runtime has settled everything (a stuck one would make each
        // request wait for its timeout): submissions the contract says to refuse.
        malformed &= unsettled.is_empty() && driver.forgotten.is_empty();
        if malformed && !malformed_submissions(driver).await {
            settle_again(driver, launch, points, unsettled).await?;
            continue;
        }
        malformed = false;
        match last_word(driver).await {
            Some(word) => return Ok(word),
            None => settle_again(driver, launch, points, unsettled).await?,
        }
    }
}

/// A crash point cut the harness's requests off: the restart every kill gets, and every
/// operation that had settled waited for again (those already unsettled or forgotten are
/// reported once, as they were).
async fn settle_again(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut UnboundedReceiver<KillPoint>,
    unsettled: &mut Vec<(String, String)>,
) -> Result<(), String> {
    let reached = driver.reached_early.take().expect("a request was cut off by a syscall kill");
    driver.syscall_restart(reached, launch).await?;
    let scenario = driver.scenario;
    let again: Vec<&Operation> = scenario
        .operations
        .iter()
        .filter(|op| driver.accepted.contains(&op.id) && !driver.forgotten.contains(&op.id))
        .filter(|op| !unsettled.iter().any(|(id, _)| *id == op.id))
        .collect();
    settle(driver, launch, &mut *points, &again, unsettled).await?;
    driver.resume_zombies().await;
    Ok(())
}

/// The malformed submissions, each marked with its answer; `false` when a syscall kill cut one
/// off (that one is not marked: its answer is the kill's, not the runtime's).
async fn malformed_submissions(driver: &mut Driver<'_>) -> bool {
    use super::record::Happening;
    let incarnation = driver.incarnation.number;
    let op = &driver.scenario.operations[0];
    // Outside the harness's turn (`Driver::sending_in_turn`): refused, they change nothing the
    // runtime does, and they come once it has settled everything.
    for submission in Resubmission::MALFORMED {
        let client = &driver.client;
        let request = async {
            let answer = client.resubmit(op, submission).await;
            let read_after = match submission.malformed_id() {
                Some(id) => Some(client.read_answer(id).await),
                None => None,
            };
            (answer, read_after)
        };
        let answered = unless_reached(&mut driver.syscall_reached, &mut driver.reached_early, request).await;
        let Some((answer, read_after)) = answered.filter(|_| !driver.syscall_killed()) else { return false };
        driver.mark(Happening::Resubmitted { operation: None, incarnation, submission, answer, read_after });
    }
    true
}

/// The final word of the runtime on every operation, and its monitoring signals after the
/// reports (the checker compares them with the ledgers); `None` when a syscall kill cut a
/// request off.
async fn last_word(driver: &mut Driver<'_>) -> Option<LastWord> {
    let mut word = LastWord::default();
    for op in &driver.scenario.operations {
        let read = driver.read(op).await;
        if driver.syscall_killed() {
            return None;
        }
        match read {
            Ok(report) => {
                word.reports.insert(op.id.clone(), report);
            }
            Err(ReadError::Unknown(answer)) => driver.forgot(&op.id, answer),
            Err(ReadError::Other(_)) => {}
        }
    }
    if driver.incarnation.metrics {
        let request = driver.client.metrics();
        let metrics = unless_reached(&mut driver.syscall_reached, &mut driver.reached_early, request).await;
        word.metrics = Some(metrics.filter(|_| !driver.syscall_killed())?);
    }
    Some(word)
}
