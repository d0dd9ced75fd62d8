//! The command line's services get the signals a `[[service_fault]]` sends. `killpoint` blocks
//! SIGINT and SIGTERM in every thread (to clean up on Ctrl-C), and a child inherits its signal
//! mask: a service it started ignored a `restart`'s SIGTERM, and was SIGKILLed 10 s later — a
//! restart was a slow crash (found by `killpoint random --services`, which then failed a correct
//! worker on `settled`). Every child now starts with no signal blocked.
//!
//! `killpoint run scenarios/service_restart_during_dispatch.toml` with the kv server beside
//! journal_worker.py (tests/fixtures/services): the restart's SIGTERM must end the server (its
//! trace line says it ended on signal 15, not SIGKILLed), and the run pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::child;
use child::{output_within, text};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn a_restart_ends_the_service_with_its_sigterm() {
    let repo = repository();
    let runs = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_killpoint"));
    command
        .args(["run", "--keep-artifacts", "--artifacts-dir"])
        .arg(runs.path())
        .arg(repo.join("scenarios/service_restart_during_dispatch.toml"))
        .arg("--services")
        .arg(repo.join("tests/fixtures/services/kv.toml"))
        .arg("--runtime")
        .arg(repo.join("tests/fixtures/services/journal_worker.py"));
    let output = output_within(command, Duration::from_secs(120), "killpoint run with a service restart");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "the run must pass:\n{stdout}\n{stderr}");
    let kept: Vec<PathBuf> = std::fs::read_dir(runs.path()).unwrap().flatten().map(|e| e.path()).collect();
    let trace = kept.iter().find_map(|dir| std::fs::read_to_string(dir.join("trace.jsonl")).ok()).unwrap_or_default();
    let restart = trace.lines().find(|l| l.contains("SIGTERM service kv")).unwrap_or_default();
    assert!(
        restart.contains("it ended (signal 15)"),
        "expected the restart's SIGTERM to end kv (signal 15), found: `{restart}`\n(kept: {kept:?})"
    );
}
