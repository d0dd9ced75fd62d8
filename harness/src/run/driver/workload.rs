//! Submitting the workload: wave by wave, one operation at a time (an `after_submit` fault fires
//! on its answer), each wave settled before the next; then the workload's end (`tail`).

use super::record::{Happening, Hit};
use super::settle::settle;
use super::state::{Driver, unless_reached};
use super::tail::{self, LastWord};
use crate::model::boundary::Boundary;
use crate::run::incarnation::{Launch, describe_status, tail_of_logs};
use crate::scenario::Operation;
use fake_tool::KillPoint;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// Submits the workload wave by wave and waits for each wave to settle, firing faults on the way;
/// then the runtime's last word.
pub(super) async fn drive(
    driver: &mut Driver<'_>,
    launch: &Launch<'_>,
    points: &mut UnboundedReceiver<KillPoint>,
    unsettled: &mut Vec<(String, String)>,
) -> Result<LastWord, String> {
    let scenario = driver.scenario;
    let waves = scenario.waves();
    // A run going on from a built state goes on in the wave it was in (the last one submitted
    // to); the ones before it had settled. A fresh run has submitted nothing: the first.
    let submitted = |op: &Operation| {
        driver
            .timeline
            .iter()
            .any(|m| matches!(&m.happening, Happening::Submitted { operation } if *operation == op.id))
    };
    let from = waves.iter().rposition(|w| w.iter().any(|op| submitted(op))).unwrap_or(0);
    for wave in waves.into_iter().skip(from) {
        for op in &wave {
            if !driver.accepted.contains(&op.id) {
                submit(driver, launch, op).await?;
            }
        }
        driver.waiting_in_turn();
        settle(driver, launch, points, &wave, unsettled).await?;
        // The wave settled under the newer incarnation: now the outlived one wakes up.
        driver.resume_zombies().await;
    }
    tail::finish(driver, launch, points, unsettled).await
}

/// One submission, the harness's turn told (a controlled schedule's): sending, then acting on
/// the answer until the driver next waits on the runtime.
async fn submit_in_turn(driver: &mut Driver<'_>, op: &Operation) -> Result<u16, String> {
    driver.sending_in_turn().await;
    let request = driver.client.submit(op);
    let submitted = unless_reached(&mut driver.syscall_reached, &mut driver.reached_early, request)
        .await
        .unwrap_or_else(|| Err("cut off: the tracer reached a fault's point first".to_owned()));
    driver.answered_in_turn();
    submitted
}

/// Submits one operation; an `after_submit` fault fires on its `202`.
async fn submit(driver: &mut Driver<'_>, launch: &Launch<'_>, op: &Operation) -> Result<(), String> {
    let scenario = driver.scenario;
    // Marked before the request: the runtime may start work before its answer arrives. Once:
    // a submission a built state's kill cut off is made again, as a re-run's client does.
    let again = driver
        .timeline
        .iter()
        .any(|m| matches!(&m.happening, Happening::Submitted { operation } if *operation == op.id));
    if !again {
        driver.mark(Happening::Submitted { operation: op.id.clone() });
    }
    let mut submitted = submit_in_turn(driver, op).await;
    // Killed at a syscall point while it handled the submission: no answer came, and a client with
    // no answer submits again (the same body), to the next incarnation.
    while driver.syscall_killed() {
        let reached = driver.reached_early.take().expect("syscall_killed said so");
        driver.syscall_restart(reached, launch).await?;
        submitted = submit_in_turn(driver, op).await;
    }
    match submitted {
        Ok(status) => {
            driver.submitted.insert(op.id.clone(), tokio::time::Instant::now());
            driver.mark(Happening::Answered { operation: op.id.clone(), status });
            driver.accepted.push(op.id.clone());
            // `after_submit`: killed the instant the runtime said it has the operation.
            let fault = scenario.faults.iter().enumerate().position(|(i, f)| {
                f.at == Boundary::AfterSubmit && f.operation == op.id && driver.hits[i] == Hit::NotReached
            });
            if let Some(i) = fault.filter(|_| status == 202) {
                driver.hits[i] = Hit::Exact;
                let what = format!("client received 202 Accepted for {}", op.id);
                driver.mark(Happening::KillPoint { operation: op.id.clone(), what });
                driver.fire(i, launch).await?;
            }
            Ok(())
        }
        Err(e) => {
            // A failed submission is most often a runtime that died on it, and the connection
            // breaks a moment before the exit can be seen: give the exit half a second to show,
            // so that the message says which it was and shows the runtime's last words.
            let number = driver.incarnation.number;
            let what = match tokio::time::timeout(Duration::from_millis(500), driver.incarnation.child.wait()).await {
                Ok(status) => {
                    let status = describe_status(status.ok());
                    driver.mark(Happening::Exited { incarnation: number, status: status.clone() });
                    format!("incarnation {number} exited on its own ({status}) while `{}` was being submitted", op.id)
                }
                Err(_) => format!("incarnation {number} is running but did not accept `{}`", op.id),
            };
            Err(format!("{what}: {e}\n{}", tail_of_logs(launch.logs, 15)))
        }
    }
}
