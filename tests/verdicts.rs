//! Verdicts that blame the right party: a harness that loses its own ground reports `error`, never
//! `fail`; and the client-side checks catch their broken variants without the probe as well.

use killpoint::judge::Status;
use killpoint::report::certificate::Certificate;
use killpoint::report::certify::certify;
use killpoint::report::outcome::ScenarioStatus;
use killpoint::{Invariant, RunOptions, Scenario, Target, run_scenario};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn reference(args: &[&str]) -> Target {
    Target {
        program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
    }
}

fn shipped(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(format!("{name}.toml"));
    Scenario::load(&path).expect("shipped scenarios parse")
}

/// Waits, on inotify events (no sleeping), until `found` finds something in `root`'s tree;
/// panics at `deadline` saying what it waited for.
fn wait_until(root: &Path, deadline: Instant, what: &str, found: impl Fn() -> Option<PathBuf>) -> PathBuf {
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK).unwrap();
    let mut watched: Vec<PathBuf> = Vec::new();
    loop {
        // Watch every directory there is, then look: whatever is created after a watch is an
        // event, whatever was there before is seen by the look.
        let mut dirs = vec![root.to_owned()];
        while let Some(dir) = dirs.pop() {
            if !watched.contains(&dir) && inotify.add_watch(&dir, AddWatchFlags::IN_CREATE).is_ok() {
                watched.push(dir.clone());
            }
            dirs.extend(
                std::fs::read_dir(&dir).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| p.is_dir()),
            );
        }
        if let Some(path) = found() {
            return path;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "waited for {what} in {}: not there by the deadline", root.display());
        let timeout = PollTimeout::try_from(left).unwrap_or(PollTimeout::MAX);
        poll(&mut [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)], timeout).unwrap();
        let _ = inotify.read_events();
    }
}

/// Processes whose environment mentions `needle` (the runtime's carries its data dir's path).
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(environ) = std::fs::read(entry.path().join("environ"))
            && String::from_utf8_lossy(&environ).contains(needle)
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// The provider answers late on purpose (a fault), so that the run is still going when its
/// directory is removed.
const SLOW: &str = r#"
description = "one charge whose provider answers a second late"
deadline_seconds = 5
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"
[[fault]]
at = "after_dispatch"
operation = "charge"
action = "delay"
delay_ms = 1000
"#;

#[test]
fn a_run_directory_removed_under_the_harness_is_an_error_not_a_failure() {
    let root = tempfile::tempdir().unwrap();
    let scenario = Scenario::parse(Path::new("tests/verdicts/slow.toml"), SLOW).unwrap();
    let options = RunOptions { artifacts_root: Some(root.path().to_owned()), ..RunOptions::default() };

    let watched = root.path().to_owned();
    let remover = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        // The run directory is the one entry the run makes in the root; it has content once the
        // runtime has opened its store in data/.
        let run_dir = || std::fs::read_dir(&watched).ok()?.flatten().map(|e| e.path()).next();
        let store = wait_until(&watched, deadline, "the runtime's store", || {
            Some(run_dir()?.join("data/runtime.sqlite3")).filter(|p| p.exists())
        });
        let run_dir = store.parent().and_then(Path::parent).unwrap().to_owned();
        std::fs::remove_dir_all(&run_dir).unwrap();
        run_dir
    });
    let outcomes = certify(&[scenario], &reference(&[]), &options, false, 1);
    let removed = remover.join().unwrap();

    let verdict = outcomes[0].verdict.as_ref().expect("the scenario ran");
    assert_eq!(verdict.status(), Status::Error, "{:?}", verdict.violations);
    assert!(verdict.violations.is_empty(), "nothing is held against the runtime: {:?}", verdict.violations);
    let error = verdict.error.as_deref().unwrap();
    assert!(error.contains(&removed.display().to_string()), "the message names the vanished path: {error}");
    assert!(error.contains("vanished"), "{error}");

    let certificate = Certificate::new(&reference(&[]), &outcomes);
    assert_eq!(certificate.scenarios[0].status, ScenarioStatus::Error);
    assert_eq!(certificate.summary.errors, 1);
    assert_eq!(certificate.summary.failed, 0);
    assert_eq!(certificate.scenarios[0].error.as_deref(), Some(error));
    let junit = certificate.to_junit();
    assert!(junit.contains("<error") && !junit.contains("<failure"), "{junit}");
    let table = killpoint::report::story::table(&[("slow".to_owned(), Ok(verdict.clone()))]);
    assert!(table.contains("ERROR") && !table.contains("FAIL"), "{table}");

    let left = processes_mentioning(&root.path().display().to_string());
    assert!(left.is_empty(), "runtime processes left running: {left:?}");
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "nothing left in the artifacts root");
}

#[test]
fn an_intent_acknowledged_before_it_is_durable_is_caught_without_the_probe() {
    let options = RunOptions { probe: false, ..RunOptions::default() };
    let (verdict, run) =
        run_scenario(&shipped("after_submit"), &reference(&["--broken", "ack-before-durable"]), &options).unwrap();
    assert!(!run.probe);
    assert!(verdict.failed_invariants().contains(&Invariant::IntentDurable), "{:?}", verdict.violations);
    let lost = verdict.violations.iter().find(|v| v.invariant == Invariant::IntentDurable).unwrap();
    assert!(lost.message.contains("incarnation 2 answered 404"), "{}", lost.message);
    assert!(run.unsettled.is_empty(), "a lost operation is reported at once, not waited for until the deadline");
    let _ = std::fs::remove_dir_all(run.keep_artifacts());
}
