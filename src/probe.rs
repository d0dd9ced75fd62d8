//! The boundary probe (CONTRACT.md §7): at each named instant the runtime tells the harness where
//! it is and waits for permission to go on. The harness either answers `resume` or kills the whole
//! process group right there, which is how a crash is placed at an exact boundary.
//!
//! One Unix stream connection for the whole life of the process, behind a mutex: a boundary message
//! and its answer are one exchange, and two tasks must never interleave theirs. If the connection
//! closes, or the harness says anything but `resume`, the runtime exits (CONTRACT.md §7).

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Mutex, mpsc};

/// The boundaries the runtime announces. The contract names a sixth, `after_dispatch`, but the
/// provider announces that one from outside (the runtime is waiting for its answer at that
/// instant), so it has no variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// Policy allowed a new attempt; `DISPATCHED` is not yet written; the provider not yet called.
    BeforeDispatch,
    /// A success (an answer or a lookup) is in memory; nothing about it is written yet.
    AfterProviderSuccess,
    /// `SUCCEEDED` and the outbox are committed; no delivery has been sent.
    AfterResultWrite,
    /// A consumer acknowledged this send; `ACKED` is not yet written.
    AfterDeliverySend,
    /// A policy refusal and its audit entry are committed.
    AfterPolicyRevocation,
}

/// Exit status when the harness is gone or misbehaves (EX_SOFTWARE).
const EXIT_PROBE_LOST: i32 = 70;

#[derive(Serialize)]
struct Announcement<'a> {
    boundary: Boundary,
    operation_id: &'a str,
    attempt: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    destination: Option<&'a str>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    action: Action,
}

#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Action {
    Resume,
}

struct Connection {
    writer: OwnedWriteHalf,
    /// Lines from the harness, read by `read_answers`.
    answers: mpsc::Receiver<String>,
}

/// The probe; a no-op when the harness runs without one.
pub struct Probe {
    connection: Option<Mutex<Connection>>,
}

impl Probe {
    pub fn disabled() -> Probe {
        Probe { connection: None }
    }

    /// Connects to the harness's socket. Called before the ready line, as the contract requires.
    pub async fn connect(path: &Path) -> Result<Probe> {
        let stream = UnixStream::connect(path)
            .await
            .with_context(|| format!("connecting to the probe socket {}", path.display()))?;
        let (reader, writer) = stream.into_split();
        let (sender, answers) = mpsc::channel(1);
        tokio::spawn(read_answers(reader, sender));
        Ok(Probe { connection: Some(Mutex::new(Connection { writer, answers })) })
    }

    /// Announces `boundary` and returns once the harness says to resume. `attempt` is the
    /// provider attempt, or for delivery boundaries the delivery's send number.
    ///
    /// Never returns if the harness answers anything but `resume` or the connection breaks: the
    /// process exits. Without the harness nobody can observe or place the next crash, and the
    /// contract says a runtime that lost its probe must stop; the durable store needs no cleanup.
    pub async fn at(&self, boundary: Boundary, operation_id: &str, attempt: u32, destination: Option<&str>) {
        let Some(connection) = &self.connection else {
            return;
        };
        let announcement = Announcement { boundary, operation_id, attempt, destination };
        let line = serde_json::to_string(&announcement).expect("an announcement is plain JSON");

        // Held until the answer is in: one message, one answer, then the next.
        let mut connection = connection.lock().await;
        if let Ok(unasked) = connection.answers.try_recv() {
            lost(&format!("the harness sent {unasked:?} before being asked anything"));
        }
        if let Err(error) = connection.writer.write_all(format!("{line}\n").as_bytes()).await {
            lost(&format!("writing {line}: {error}"));
        }
        match connection.answers.recv().await {
            Some(answer) => match serde_json::from_str::<Answer>(&answer) {
                Ok(Answer { action: Action::Resume }) => {}
                Err(_) => lost(&format!("expected {{\"action\":\"resume\"}} after {line}, found {answer:?}")),
            },
            // Only if the reader task died without exiting the process (a panic): same outcome.
            None => lost("the probe reader stopped"),
        }
    }

    /// Returns once no announcement is waiting for its answer (at once without the probe).
    ///
    /// A task calls it before it starts on an operation: an operation's last announcement can
    /// follow the commit that settles it (`after_policy_revocation`), so a client may already have
    /// submitted the next operation while that answer is outstanding. Starting the new work only
    /// after the answer keeps the order a one-at-a-time workload was always seen in.
    pub async fn quiet(&self) {
        if let Some(connection) = &self.connection {
            drop(connection.lock().await);
        }
    }
}

/// Reads the harness's lines for the whole life of the process. Reading all the time, not only
/// while waiting for an answer, is what notices a harness that went away while the runtime was
/// idle: the runtime exits then instead of outliving it.
async fn read_answers(reader: OwnedReadHalf, answers: mpsc::Sender<String>) {
    let mut lines = BufReader::new(reader).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if answers.send(line).await.is_err() {
                    return; // The probe itself is gone: the process is ending anyway.
                }
            }
            Ok(None) => lost("the harness closed the connection"),
            Err(error) => lost(&format!("reading from the harness: {error}")),
        }
    }
}

fn lost(why: &str) -> ! {
    eprintln!("probe: {why}; exiting");
    std::process::exit(EXIT_PROBE_LOST);
}
