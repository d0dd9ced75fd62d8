//! `killpoint-tracer` on real processes: the points it announces on the trace socket, a kill at a
//! write's `before` and `after` leaving the file as the point says, and the reference runtime
//! passing a scenario under it (tracing must not break a runtime).
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use killpoint::tracer::{Peer, Point, PointKind, When};
use killpoint::{RunOptions, Scenario, Target, run_scenario};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::time::timeout;

const TRACER: &str = env!("CARGO_BIN_EXE_killpoint-tracer");
const DEADLINE: Duration = Duration::from_secs(10);

/// Where the test kills the traced program.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KillAt {
    Never,
    /// At the first durable point of this `when`.
    Durable(When),
}

/// Runs `sh -c script` under the tracer with a trace socket, answering every point (or killing the
/// process group at `kill_at`); returns the points seen and how the tracer ended.
fn traced_shell(script: &str, data: &Path, kill_at: KillAt) -> (Vec<Point>, ExitStatus) {
    traced_shell_answering(script, data, kill_at, false)
}

/// [`traced_shell`], answering the first point `go_on` and no other when `go_on`.
fn traced_shell_answering(script: &str, data: &Path, kill_at: KillAt, go_on: bool) -> (Vec<Point>, ExitStatus) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let socket_dir = tempfile::tempdir().unwrap();
        let socket = socket_dir.path().join("trace.sock");
        let listener = UnixListener::bind(&socket).unwrap();
        let mut child = tokio::process::Command::new(TRACER)
            .args(["--", "/bin/sh", "-c", script])
            .env("KILLPOINT_DATA_DIR", data)
            .env("KILLPOINT_TRACE_SOCKET", &socket)
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let group = Pid::from_raw(child.id().unwrap() as i32);
        let (stream, _) = timeout(DEADLINE, listener.accept())
            .await
            .expect("the tracer to connect to the trace socket within 10 s")
            .unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut points = Vec::new();
        while let Some(line) = timeout(DEADLINE, lines.next_line())
            .await
            .expect("the next point or the tracer's exit within 10 s")
            .unwrap()
        {
            let point: Point = serde_json::from_str(&line).unwrap_or_else(|e| panic!("a point: {e}: {line}"));
            let kill =
                matches!(kill_at, KillAt::Durable(when) if point.kind == PointKind::Durable && point.when == when);
            points.push(point);
            if kill {
                // What the harness does: never answer, SIGKILL the whole process group.
                killpg(group, Signal::SIGKILL).unwrap();
                break;
            }
            match (go_on, points.len()) {
                (false, _) => write.write_all(b"{\"action\":\"resume\"}\n").await.unwrap(),
                (true, 1) => write.write_all(b"{\"action\":\"go_on\"}\n").await.unwrap(),
                (true, _) => {}
            }
        }
        let status = timeout(DEADLINE, child.wait()).await.expect("the tracer to exit within 10 s").unwrap();
        (points, status)
    })
}

fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    // The tracer names files as /proc/<tid>/fd resolves them: canonical.
    let data = dir.path().canonicalize().unwrap();
    (dir, data)
}

const WRITE_F: &str = "echo x > \"$KILLPOINT_DATA_DIR/f\"";

#[test]
fn a_write_under_the_data_dir_is_two_points() {
    let (_dir, data) = data_dir();
    let (points, status) =
        traced_shell(&format!("{WRITE_F}; echo elsewhere > /dev/null; exit 3"), &data, KillAt::Never);
    assert_eq!(status.code(), Some(3), "the tracer exits with the program's status");
    let f = data.join("f").display().to_string();
    // (when, call, kind, path, bytes, ret) of each point.
    type Seen<'a> = (When, &'a str, PointKind, Option<&'a str>, Option<u64>, Option<i64>);
    let seen: Vec<Seen> =
        points.iter().map(|p| (p.when, p.call.as_str(), p.kind, p.path.as_deref(), p.bytes, p.ret)).collect();
    assert_eq!(
        seen,
        [
            (When::Before, "write", PointKind::Durable, Some(f.as_str()), Some(2), None),
            (When::After, "write", PointKind::Durable, Some(f.as_str()), Some(2), Some(2)),
        ]
    );
    assert_eq!(points.iter().map(|p| p.n).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(std::fs::read_to_string(data.join("f")).unwrap(), "x\n");
}

/// After `go_on` the tracer announces every point without waiting: a harness that answers nothing
/// more still sees them all, in order, and the program runs to its end.
#[test]
fn after_go_on_points_are_told_not_asked() {
    let (_dir, data) = data_dir();
    let script = "for i in 1 2 3; do echo $i > \"$KILLPOINT_DATA_DIR/f$i\"; done; exit 4";
    let (points, status) = traced_shell_answering(script, &data, KillAt::Never, true);
    assert_eq!(status.code(), Some(4), "the program ran to its end with one answer");
    let numbers: Vec<u64> = points.iter().map(|p| p.n).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6], "a write's before and after, three times");
    assert_eq!(std::fs::read_to_string(data.join("f3")).unwrap(), "3\n");
}

#[test]
fn a_kill_before_the_write_leaves_the_file_empty() {
    let (_dir, data) = data_dir();
    let (points, status) = traced_shell(WRITE_F, &data, KillAt::Durable(When::Before));
    assert_eq!(points.last().map(|p| (p.when, p.call.as_str())), Some((When::Before, "write")));
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    // The shell's redirection created the file (openat is not a point); the write never ran.
    assert_eq!(std::fs::read_to_string(data.join("f")).unwrap(), "");
}

#[test]
fn a_kill_after_the_write_leaves_the_file_written() {
    let (_dir, data) = data_dir();
    let (points, status) = traced_shell(WRITE_F, &data, KillAt::Durable(When::After));
    assert_eq!(points.last().map(|p| (p.when, p.call.as_str(), p.ret)), Some((When::After, "write", Some(2))));
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    assert_eq!(std::fs::read_to_string(data.join("f")).unwrap(), "x\n");
}

#[test]
fn renames_and_unlinks_under_the_data_dir_are_points() {
    let (_dir, data) = data_dir();
    let script = "cd \"$KILLPOINT_DATA_DIR\" && : > a && mv a b && rm b";
    let (points, status) = traced_shell(script, &data, KillAt::Never);
    assert!(status.success());
    let seen: Vec<(When, PointKind, Option<String>, Option<String>)> =
        points.iter().map(|p| (p.when, p.kind, p.path.clone(), p.to.clone())).collect();
    let at = |name: &str| Some(data.join(name).display().to_string());
    assert_eq!(
        seen,
        [
            (When::Before, PointKind::Rename, at("a"), at("b")),
            (When::After, PointKind::Rename, at("a"), at("b")),
            (When::Before, PointKind::Unlink, at("b"), None),
            (When::After, PointKind::Unlink, at("b"), None),
        ]
    );
}

#[test]
fn a_program_that_cannot_be_found_is_named() {
    let output = std::process::Command::new(TRACER).args(["--", "/nonexistent/runtime"]).output().unwrap();
    assert_eq!(output.status.code(), Some(127));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "killpoint-tracer: cannot run /nonexistent/runtime: No such file or directory (os error 2)\n"
    );
}

/// Tracing must not break a runtime: the reference runtime passes a standard scenario under the
/// tracer (counting only: no trace socket).
#[test]
fn the_reference_runtime_passes_under_the_tracer() {
    let runtime = killpoint::reference_runtime()
        .expect("target/<profile>/killpoint-runtime: build it first (cargo test --workspace does)");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/after_dispatch.toml");
    let scenario = Scenario::load(&path).expect("shipped scenarios parse");
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("points.jsonl");
    let args = ["--log", &log.display().to_string(), "--", &runtime.display().to_string()].map(str::to_owned);
    let target = Target { program: TRACER.into(), args: args.to_vec() };
    let (verdict, run) = run_scenario(&scenario, &target, &RunOptions::default()).unwrap();
    // Every part of the world was seen, each request with its answer, and SQLite's writes.
    let points: Vec<Point> =
        std::fs::read_to_string(&log).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let count =
        |kind, peer| points.iter().filter(|p| p.kind == kind && p.peer == peer && p.when == When::After).count();
    for peer in [Peer::Provider, Peer::Consumers, Peer::Policy] {
        let (requests, answers) = (count(PointKind::Request, Some(peer)), count(PointKind::Answer, Some(peer)));
        assert!(requests > 0 && answers > 0, "{}: {requests} requests, {answers} answers", serde_json::json!(peer));
    }
    assert!(count(PointKind::Durable, None) > 0 && count(PointKind::Sync, None) > 0, "SQLite writes and syncs");
    assert!(
        verdict.passed(),
        "after_dispatch under the tracer:\n{}",
        killpoint::report::story::story(&scenario, &verdict, &run)
    );
}

/// `--die-with PID --exec`: how the harness starts every child (`killpoint::tracer::tether`). The
/// program runs with its arguments, in the tracer's place.
#[test]
fn die_with_exec_runs_the_program_with_its_arguments() {
    let me = std::process::id().to_string();
    let output = std::process::Command::new(TRACER)
        .args(["--die-with", &me, "--exec", "--", "sh", "-c", "echo \"$0 $1\"; exit 3", "zero", "one"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "zero one\n");
}

/// A program exec refuses is named as the harness names it, and the status is 127.
#[test]
fn die_with_exec_names_a_program_that_cannot_start() {
    let me = std::process::id().to_string();
    let output = std::process::Command::new(TRACER)
        .args(["--die-with", &me, "--exec", "--", "/nonexistent/runtime"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("cannot start: `/nonexistent/runtime` does not exist"), "{said}");
}

/// A parent that is not the one named (it died, and we were handed to a reaper) ends it at once.
#[test]
fn die_with_a_parent_that_is_not_ours_runs_nothing() {
    let output = std::process::Command::new(TRACER)
        .args(["--die-with", "1", "--exec", "--", "sh", "-c", "echo ran"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "", "the program must not run");
    assert!(String::from_utf8_lossy(&output.stderr).contains("(pid 1) is gone"), "{output:?}");
}

/// PDEATHSIG is armed before the program runs: the program dies (SIGKILL) when the thread that
/// started it ends, as it would when the harness dies.
#[test]
fn die_with_kills_the_program_when_its_parent_goes() {
    use std::io::BufRead;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let me = std::process::id().to_string();
    let starter = std::thread::spawn(move || {
        let mut child = std::process::Command::new(TRACER)
            .args(["--die-with", &me, "--exec", "--", "sh", "-c", "echo armed; exec sleep 30"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        // Armed before exec, so once the program speaks: the thread may end.
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line, "armed\n");
        child
    });
    let mut child = starter.join().unwrap();
    let group = Pid::from_raw(child.id() as i32);
    let (sender, receiver) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || sender.send(child.wait().unwrap()));
    let status = receiver.recv_timeout(DEADLINE);
    let _ = killpg(group, Signal::SIGKILL);
    let _ = waiter.join();
    let status = status.expect("the program is still running 10 s after the thread that started it ended");
    assert_eq!(status.signal(), Some(9), "{status}");
}
