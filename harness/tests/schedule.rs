//! `killpoint-tracer` under a controlled schedule (`$KILLPOINT_SCHEDULE`) on a real program: two
//! Python threads race their first durable writes while one of them then blocks on an event the
//! other sets (a futex wait outside any traced call). The schedule must never deadlock on the
//! blocked thread, must put each thread first for some seed, and must give the same order for the
//! same seed every time. The test answers the tracer as the harness does: `decide` at every
//! settled report, `resume` at every point.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use killpoint::tracer::{Point, PointKind, Schedule, When};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::time::timeout;

const TRACER: &str = env!("CARGO_BIN_EXE_killpoint-tracer");
const DEADLINE: Duration = Duration::from_secs(20);

/// Thread `a` writes a.log, then waits for `b`'s event, then writes again; thread `b` writes
/// b.log and sets the event. Each write is one `write` under the data dir.
const RACE: &str = r#"
import os, sys, threading
data = os.environ["KILLPOINT_DATA_DIR"]
done = threading.Event()
def write(name, text):
    fd = os.open(os.path.join(data, name), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, text)
    os.close(fd)
def a():
    write("a.log", b"first\n")
    done.wait(30)
    write("a.log", b"after b\n")
def b():
    write("b.log", b"first\n")
    done.set()
ts = [threading.Thread(target=a), threading.Thread(target=b)]
[t.start() for t in ts]
[t.join() for t in ts]
"#;

/// The files of the durable `before` points, in the order the schedule let them go.
fn scheduled_writes(seed: u64, data: &Path) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let socket_dir = tempfile::tempdir().unwrap();
        let socket = socket_dir.path().join("trace.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let mut child = tokio::process::Command::new(TRACER)
            .args(["--", "python3", "-c", RACE])
            .env("KILLPOINT_DATA_DIR", data)
            .env("KILLPOINT_TRACE_SOCKET", &socket)
            .env(Schedule::VARIABLE, Schedule::seeded(seed).to_variable())
            .env("KILLPOINT_CI_RUN", "1")
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stream, _) =
            timeout(DEADLINE, listener.accept()).await.expect("the tracer connected within 20 s").unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut writes = Vec::new();
        while let Some(line) = timeout(DEADLINE, lines.next_line())
            .await
            .expect("a settled report, a point or the tracer's exit within 20 s: the schedule deadlocked")
            .unwrap()
        {
            if line.starts_with("{\"settled\"") {
                write.write_all(b"{\"action\":\"decide\"}\n").await.unwrap();
                continue;
            }
            let point: Point = serde_json::from_str(&line).unwrap_or_else(|e| panic!("a point: {e}: {line}"));
            if point.kind == PointKind::Durable && point.when == When::Before {
                assert!(
                    point.step.is_some() && point.thread.is_some(),
                    "a scheduled point names its step and thread: {line}"
                );
                let file = Path::new(point.path.as_deref().unwrap_or_default()).file_name().unwrap();
                writes.push(file.to_string_lossy().into_owned());
            }
            write.write_all(b"{\"action\":\"resume\"}\n").await.unwrap();
        }
        let status = timeout(DEADLINE, child.wait()).await.expect("the tracer exited within 20 s").unwrap();
        assert!(status.success(), "the traced program ended {status}");
        writes
    })
}

#[test]
fn a_schedule_orders_racing_threads_by_its_seed_and_never_waits_on_a_blocked_one() {
    let mut firsts = BTreeSet::new();
    for seed in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().canonicalize().unwrap();
        let writes = scheduled_writes(seed, &data);
        assert_eq!(writes.len(), 3, "seed {seed}: every write went: {writes:?}");
        // `a`'s second write waits for `b`'s event: it comes after `b`'s write in every order.
        let b = writes.iter().position(|w| w == "b.log").unwrap();
        assert_eq!(writes.iter().rposition(|w| w == "a.log").map(|i| i > b), Some(true), "seed {seed}: {writes:?}");
        let again = {
            let dir = tempfile::tempdir().unwrap();
            scheduled_writes(seed, &dir.path().canonicalize().unwrap())
        };
        assert_eq!(again, writes, "seed {seed} gave two orders");
        firsts.insert(writes[0].clone());
    }
    assert_eq!(firsts.len(), 2, "six seeds put each thread's write first at least once: {firsts:?}");
}
