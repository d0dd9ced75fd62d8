//! `.ci/run` judges its own test run, never the rest of the machine: after README's test command it
//! fails on a process the tests left running or a file they left in their temp dir, and on nothing
//! else. Here it runs with a fake `cargo` (tests/fixtures/ci-run/) that plays what the tests did,
//! in a scratch dir that stands for the system's temp dir.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `.ci/run`, with the fakes first on PATH, `system_tmp` as TMPDIR, and the fake cargo doing
/// `tests`; killed after 60 s. Returns its output, stdout then stderr.
fn ci_run(system_tmp: &Path, tests: &str, extra: &[(&str, &Path)]) -> (Output, String) {
    let fakes = root().join("tests/fixtures/ci-run");
    let path = format!("{}:{}", fakes.display(), std::env::var("PATH").unwrap_or_default());
    let output = Command::new("timeout")
        .args(["60", "bash"])
        .arg(root().join(".ci/run"))
        .env("PATH", path)
        .env("TMPDIR", system_tmp)
        .env("FAKE_TESTS", tests)
        .env("FAKE_SYSTEM_TMP", system_tmp)
        .envs(extra.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("timeout and bash run .ci/run");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output, text)
}

/// What is in `dir`, by name.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A process of someone else's, named like a runtime: killed and reaped when dropped, and ends
/// on its own after 60 s.
struct Stranger(Child);

impl Stranger {
    fn start() -> Stranger {
        let child = Command::new("sleep")
            .arg0("killpoint-runtime")
            .arg("60")
            .env_remove("KILLPOINT_CI_RUN")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep starts");
        Stranger(child)
    }
}

impl Drop for Stranger {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn someone_elses_runtime_and_temp_dir_do_not_fail_ci() {
    let system_tmp = tempfile::tempdir().unwrap();
    let stranger = Stranger::start();
    let (output, text) = ci_run(system_tmp.path(), "elsewhere", &[]);
    assert!(
        output.status.success(),
        "expected .ci/run to pass beside a `killpoint-runtime` it did not start (pid {}) and a temp dir \
         killpoint-foo made meanwhile in the system's temp dir; it ended {}:\n{text}",
        stranger.0.id(),
        output.status
    );
    // README's test command, with a temp dir of the run's own, and insta writing no `.snap.new`.
    let tmp = format!("TMPDIR={}/ci-run.", system_tmp.path().display());
    let called = text.lines().find(|l| l.starts_with("cargo ")).unwrap_or_default();
    assert!(
        called.starts_with(&format!("cargo test --workspace with {tmp}")) && called.ends_with(" INSTA_UPDATE=no"),
        "expected `cargo test --workspace with {tmp}… INSTA_UPDATE=no`, found `{called}` in:\n{text}"
    );
    assert_eq!(names(system_tmp.path()), ["killpoint-foo"], "the run's own temp dir is removed, the stranger's kept");
}

/// The fake tests' leftover process, killed when dropped (it is not ours to reap: its parent, the
/// fake cargo, has exited, and it ends on its own after 60 s).
struct Leftover(Option<i32>);

impl Drop for Leftover {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

#[test]
fn a_process_the_tests_left_running_fails_ci() {
    let system_tmp = tempfile::tempdir().unwrap();
    let pid_file = system_tmp.path().join("leftover.pid");
    let (output, text) = ci_run(system_tmp.path(), "leave-process", &[("FAKE_PID_FILE", &pid_file)]);
    let pid = std::fs::read_to_string(&pid_file).ok().and_then(|p| p.trim().parse().ok());
    let _leftover = Leftover(pid);
    let pid = pid.unwrap_or_else(|| panic!("the fake cargo wrote no pid into {}:\n{text}", pid_file.display()));
    assert!(
        !output.status.success() && text.lines().any(|l| l.starts_with(&format!("{pid} sleep 60"))),
        "expected .ci/run to fail naming `{pid} sleep 60`, left running by the tests (by no name a runtime has); \
         it ended {}:\n{text}",
        output.status
    );
}

#[test]
fn a_file_the_tests_left_in_their_temp_dir_fails_ci() {
    let system_tmp = tempfile::tempdir().unwrap();
    let (output, text) = ci_run(system_tmp.path(), "leave-file", &[]);
    let left = format!("{}/ci-run.", system_tmp.path().display());
    assert!(
        !output.status.success() && text.lines().any(|l| l.starts_with(&left) && l.ends_with("/killpoint-left")),
        "expected .ci/run to fail naming {left}…/killpoint-left, left by the tests; it ended {}:\n{text}",
        output.status
    );
    assert_eq!(names(system_tmp.path()), Vec::<String>::new(), "the run's own temp dir is removed, even on a failure");
}

#[test]
fn a_failing_test_run_keeps_its_temp_dir_for_the_reports_that_point_into_it() {
    let system_tmp = tempfile::tempdir().unwrap();
    let (output, text) = ci_run(system_tmp.path(), "fail", &[]);
    let run_dirs = names(system_tmp.path());
    let kept = match run_dirs.as_slice() {
        [dir] if dir.starts_with("ci-run.") => system_tmp.path().join(dir),
        _ => panic!("expected the run's one temp dir ci-run.… kept, found {run_dirs:?}; .ci/run said:\n{text}"),
    };
    assert_eq!(output.status.code(), Some(101), "expected cargo's own exit status; .ci/run said:\n{text}");
    assert!(
        kept.join("killpoint-kept").is_dir() && text.contains(&format!("what they kept is in {}", kept.display())),
        "expected {} kept, and named; .ci/run said:\n{text}",
        kept.join("killpoint-kept").display()
    );
    // The report's first lines again below the 200 lines after it: a tail shows why.
    let after = text.rsplit_once("\n200\n").map_or("", |(_, after)| after);
    assert!(
        after.contains("---- some::trial ----\nexpected it to pass, found why it did not\n"),
        "expected the failing trial's report again in the last lines; .ci/run said:\n{text}"
    );
}

/// The run's temp dir is `TMPDIR` when set; unset, it is `/dev/shm` where the harness would keep
/// its run directories in memory (a tmpfs with room: `killpoint::run::ram`), else `/tmp`.
#[test]
fn the_run_s_temp_dir_is_tmpdir_when_set_else_in_memory_where_the_harness_would_be() {
    let root_of = |tmpdir: Option<&str>| {
        let mut command = Command::new("bash");
        command.args(["-c", "source .ci/run && temp_root"]).current_dir(root());
        match tmpdir {
            Some(dir) => command.env("TMPDIR", dir),
            None => command.env_remove("TMPDIR"),
        };
        let output = command.output().expect("bash runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    };
    assert_eq!(root_of(Some("/somewhere/else")), "/somewhere/else");
    let expected = if killpoint::run::ram::shm_usable() { "/dev/shm" } else { "/tmp" };
    assert_eq!(root_of(None), expected);
}
