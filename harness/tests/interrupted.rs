//! A search interrupted keeps what it found: `killpoint explore` and `killpoint random` write each
//! failure to `--out` as they find it, so a Ctrl-C (or a CI timeout) after the first failure leaves
//! its scenario file behind.
//!
//! Each test starts the search on a broken reference runtime, waits (with a deadline) for the
//! first file to appear in the out dir, sends SIGINT, and waits for the process to exit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn reference_runtime() -> PathBuf {
    let beside = Path::new(env!("CARGO_BIN_EXE_killpoint")).with_file_name("killpoint-runtime");
    assert!(
        beside.is_file(),
        "{} is not built: run `cargo build --workspace` (or `cargo test --workspace`) first",
        beside.display()
    );
    beside
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A `killpoint` child whose output is read as it comes (a full pipe would stall it); its stderr
/// so far is readable while it runs (`stderr_so_far`).
struct Search {
    child: Child,
    stdout: std::thread::JoinHandle<String>,
    stderr: std::thread::JoinHandle<String>,
    stderr_so_far: Arc<Mutex<String>>,
}

impl Search {
    /// `killpoint ARGS…` with its data dirs under `tmp` (an interrupted run keeps its own).
    fn start(args: &[&str], tmp: &Path) -> Search {
        let mut child = Command::new(env!("CARGO_BIN_EXE_killpoint"))
            .args(args)
            .env("TMPDIR", tmp)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("killpoint starts");
        let reader = |mut pipe: Box<dyn Read + Send>, so_far: Arc<Mutex<String>>| {
            std::thread::spawn(move || {
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                    so_far.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n]));
                }
                so_far.lock().unwrap().clone()
            })
        };
        let stdout = reader(Box::new(child.stdout.take().expect("piped stdout")), Arc::default());
        let stderr_so_far = Arc::new(Mutex::new(String::new()));
        let stderr = reader(Box::new(child.stderr.take().expect("piped stderr")), stderr_so_far.clone());
        Search { child, stdout, stderr, stderr_so_far }
    }

    /// Waits until a `.toml` file is in `dir`, or the process exits, or `deadline` passes.
    fn wait_for_file(&mut self, dir: &Path, deadline: Duration) -> Result<PathBuf, String> {
        let started = Instant::now();
        loop {
            let found = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "toml"));
            if let Some(file) = found {
                return Ok(file);
            }
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                return Err(format!("killpoint exited ({status}) before writing a failure file to {}", dir.display()));
            }
            if started.elapsed() > deadline {
                return Err(format!("no failure file in {} after {deadline:?}", dir.display()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until explore has printed a progress line, which it does just after writing a
    /// failure's file (interrupted between the two, it has not said how far it got), or the
    /// process exits, or `deadline` passes.
    fn wait_for_progress(&mut self, deadline: Duration) -> Result<(), String> {
        let started = Instant::now();
        while progress(&self.stderr_so_far.lock().unwrap()).is_empty() {
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                return Err(format!("killpoint exited ({status}) before printing a progress line"));
            }
            if started.elapsed() > deadline {
                return Err(format!("no progress line after {deadline:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// SIGINT, then the exit status and output (SIGKILL and a panic if it does not exit in time).
    fn interrupt(mut self, deadline: Duration) -> (ExitStatus, String, String) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waitpid") {
                break status;
            }
            if started.elapsed() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("killpoint did not exit within {deadline:?} of SIGINT");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout = self.stdout.join().unwrap_or_default();
        let stderr = self.stderr.join().unwrap_or_default();
        (status, stdout, stderr)
    }

    /// Ends the search when a wait failed, and says so with what it printed.
    fn fail(mut self, why: String) -> ! {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (stdout, stderr) = (self.stdout.join().unwrap_or_default(), self.stderr.join().unwrap_or_default());
        panic!("{why}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    }
}

/// The plain progress lines' `done/total` (stderr is a pipe here, so they are printed).
fn progress(stderr: &str) -> Vec<(usize, usize)> {
    stderr
        .lines()
        .filter_map(|l| {
            let (done, total) = l.trim_start().split(' ').next()?.split_once('/')?;
            Some((done.parse().ok()?, total.parse().ok()?))
        })
        .collect()
}

#[test]
fn an_interrupted_explore_leaves_the_failures_it_found_in_out() {
    let (out, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let scenario = repository().join("scenarios/after_dispatch.toml");
    let runtime = reference_runtime();
    let out_arg = out.path().to_str().unwrap();
    // One case at a time: blind-retry fails on the first kill after a call, dozens of cases before
    // the end.
    let args = ["explore", scenario.to_str().unwrap(), "--jobs", "1", "--out", out_arg, "--runtime"];
    let mut args = args.to_vec();
    args.extend([runtime.to_str().unwrap(), "--", "--broken", "blind-retry"]);
    let mut search = Search::start(&args, tmp.path());
    let file = match search.wait_for_file(out.path(), Duration::from_secs(120)) {
        Ok(file) => file,
        Err(why) => search.fail(why),
    };
    if let Err(why) = search.wait_for_progress(Duration::from_secs(30)) {
        search.fail(why);
    }
    let (status, stdout, stderr) = search.interrupt(Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "not stopped by the interrupt\nstdout:\n{stdout}\nstderr:\n{stderr}");
    // Stopped early: cases were left to run when the file appeared.
    let last = progress(&stderr).last().copied();
    assert!(last.is_some_and(|(done, total)| done < total), "progress when interrupted: {last:?}\n{stderr}");
    let written = killpoint::Scenario::load(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(written.description.contains("Found by `killpoint explore`"), "{}", written.description);
    assert!(written.faults.iter().any(|f| f.action == killpoint::scenario::Action::Kill), "{}", written.to_toml());
}

#[test]
fn an_interrupted_random_search_leaves_its_failure_in_out() {
    let (out, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let runtime = reference_runtime();
    let args = ["random", "--seed", "7", "--cases", "64", "--out", out.path().to_str().unwrap(), "--runtime"];
    let mut args = args.to_vec();
    args.extend([runtime.to_str().unwrap(), "--", "--broken", "blind-retry"]);
    let mut search = Search::start(&args, tmp.path());
    let file = match search.wait_for_file(out.path(), Duration::from_secs(120)) {
        Ok(file) => file,
        Err(why) => search.fail(why),
    };
    let (status, stdout, stderr) = search.interrupt(Duration::from_secs(30));
    // Interrupted while it shrank: the summary is never printed.
    assert_eq!(status.code(), Some(130), "not stopped by the interrupt\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(!stdout.contains("a case failed"), "the search had ended:\n{stdout}");
    let written = killpoint::Scenario::load(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert!(written.description.contains("seed 7"), "{}", written.description);
    // The file is the case as far as the search had shrunk it, not its last word.
    assert!(written.description.contains("still shrinking"), "{}", written.description);
    assert!(!written.faults.is_empty(), "{}", written.to_toml());
}

/// An interrupt leaves in the temp dir only the unfinished runs' dirs it names: the sockets' dirs
/// and the copies of built crash states are scratch, removed before the exit.
#[test]
fn an_interrupted_explore_over_built_states_leaves_only_the_runs_it_names() {
    let (out, tmp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let scenario = repository().join("scenarios/after_dispatch.toml");
    let runtime = reference_runtime();
    let out_arg = out.path().to_str().unwrap();
    let args = ["explore", scenario.to_str().unwrap(), "--points", "syscalls", "--no-probe", "--jobs", "2"];
    let mut args = args.to_vec();
    args.extend(["--out", out_arg, "--runtime", runtime.to_str().unwrap(), "--", "--broken", "blind-retry"]);
    let mut search = Search::start(&args, tmp.path());
    if let Err(why) = search.wait_for_file(out.path(), Duration::from_secs(120)) {
        search.fail(why);
    }
    let (status, stdout, stderr) = search.interrupt(Duration::from_secs(30));
    assert_eq!(status.code(), Some(130), "not stopped by the interrupt\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let left: Vec<PathBuf> = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.path()).collect();
    let unnamed: Vec<&PathBuf> =
        left.iter().filter(|p| !stderr.contains(&format!("kept at {}", p.display()))).collect();
    assert!(unnamed.is_empty(), "left in the temp dir and not named by the interrupt: {unnamed:#?}\nstderr:\n{stderr}");
}
