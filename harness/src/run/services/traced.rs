//! A service under `killpoint-tracer` in machine-crash mode (`--crash machine`; CONTRACT.md
//! section 7, "Machine crashes"): a power loss takes the whole machine, so each service's data dir
//! must be rebuilt to what the service synced, as the worker's is. Only the tracer sees the syncs,
//! so the service runs under it, on a socket of its own, with its data dir as the tracer's
//! (`--data-dir`: a service is not given `KILLPOINT_DATA_DIR`).
//!
//! Every point is resumed at once (no fault stops a service at a system call) after the
//! power-loss model has recorded it (a sync's copy is taken while the service is held there), and
//! counted, for the trace. One tracer at a time: a service is started again only once the last
//! one was reaped, and its tracer's connection ends with it.
//!
//! The tracer follows every thread and process the service starts (`fork`, `vfork`, `clone`,
//! `exec`): a server that forks a process per connection (Postgres) is traced whole.

use crate::run::power_loss::PowerLoss;
use crate::tracer::{Point, PointKind, When};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::task::JoinHandle;

/// The points of a service since its last start, as the trace tells them.
#[derive(Debug, Default)]
struct Tally {
    points: AtomicU64,
    syncs: AtomicU64,
}

/// What a power loss did to one service's data dir, and what the tracer had seen of it.
#[derive(Debug, Clone)]
pub struct Lost {
    /// A line per file that went back to its last sync or vanished (`PowerLoss::restore`).
    pub lost: Vec<String>,
    /// The points the tracer stopped the service at since its last start, each resumed at once.
    pub points: u64,
    /// Of those, the completed syncs (and writes through an `O_SYNC`/`O_DSYNC` fd).
    pub syncs: u64,
}

/// One service's tracing: its socket, its power-loss model, and the task answering its tracer.
pub(super) struct Traced {
    tracer: PathBuf,
    socket: PathBuf,
    data: PathBuf,
    listener: Arc<UnixListener>,
    model: Arc<PowerLoss>,
    tally: Arc<Tally>,
    answering: JoinHandle<()>,
}

impl Traced {
    /// Tracing for a service keeping its state in `data` (made, empty: the baseline), announcing
    /// on `socket`.
    pub(super) fn new(tracer: PathBuf, socket: PathBuf, data: &Path) -> Result<Traced, String> {
        let listener = UnixListener::bind(&socket)
            .map_err(|e| format!("cannot listen on the Unix socket {}: {e}", socket.display()))?;
        let model = PowerLoss::new(data)
            .map_err(|e| format!("cannot read its data dir {} for the power-loss model: {e}", data.display()))?;
        let (listener, model, tally) = (Arc::new(listener), Arc::new(model), Arc::new(Tally::default()));
        let answering = tokio::spawn(answer(listener.clone(), model.clone(), tally.clone()));
        Ok(Traced { tracer, socket, data: data.to_owned(), listener, model, tally, answering })
    }

    /// The service's command under the tracer: `killpoint-tracer --data-dir DATA -- PROGRAM ARGS…`,
    /// and the variable that names the socket.
    pub(super) fn wrap(&self, program: &Path, args: &[String]) -> (PathBuf, Vec<String>, (String, String)) {
        let mut wrapped = vec!["--data-dir".to_owned(), self.data.display().to_string(), "--".to_owned()];
        wrapped.push(program.display().to_string());
        wrapped.extend(args.iter().cloned());
        let socket = (crate::run::traced::SOCKET_VARIABLE.to_owned(), self.socket.display().to_string());
        (self.tracer.clone(), wrapped, socket)
    }

    /// The service is being started again (after a power loss, or a `[[service_fault]]` in
    /// machine-crash mode): its points count from this start.
    pub(super) fn restarting(&self) {
        self.tally.points.store(0, Ordering::SeqCst);
        self.tally.syncs.store(0, Ordering::SeqCst);
    }

    /// The power goes: from now on nothing the service syncs is recorded (its tracer's next
    /// point waits for an answer that never comes), as if it stopped at once.
    pub(super) fn cut(&mut self) {
        self.answering.abort();
    }

    /// Once the service was killed and reaped: its data dir becomes what a power loss leaves,
    /// which is the new baseline; its next start's tracer is answered by a new task.
    pub(super) fn restore(&mut self) -> Result<Lost, String> {
        // Stopped again (a no-op after `cut`): a line its dead tracer sent and nobody read yet
        // must not reach the model after the restore.
        self.answering.abort();
        let lost = self.model.restore().map_err(|e| format!("cannot rebuild its data dir after a power loss: {e}"))?;
        let points = self.tally.points.load(Ordering::SeqCst);
        let syncs = self.tally.syncs.load(Ordering::SeqCst);
        self.answering = tokio::spawn(answer(self.listener.clone(), self.model.clone(), self.tally.clone()));
        Ok(Lost { lost, points, syncs })
    }
}

impl Drop for Traced {
    fn drop(&mut self) {
        self.answering.abort();
    }
}

/// Answers each start's tracer in turn: every point recorded, counted and resumed.
async fn answer(listener: Arc<UnixListener>, model: Arc<PowerLoss>, tally: Arc<Tally>) {
    while let Ok((stream, _)) = listener.accept().await {
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        // A closed socket is the tracer's end (the service died): wait for the next start's.
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(point) = serde_json::from_str::<Point>(&line) else { break };
            model.record(&point);
            tally.points.fetch_add(1, Ordering::Relaxed);
            if is_sync(&point) {
                tally.syncs.fetch_add(1, Ordering::Relaxed);
            }
            if write.write_all(b"{\"action\":\"resume\"}\n").await.is_err() {
                break;
            }
        }
    }
}

fn is_sync(point: &Point) -> bool {
    let done = point.when == When::After && point.ret.is_none_or(|r| r >= 0);
    done && (point.kind == PointKind::Sync || (point.kind == PointKind::Durable && point.synced))
}
