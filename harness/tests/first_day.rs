//! What a user meets on the first day (issue 20's rough edges): `killpoint` installed alone, a
//! `[[catches]]` whose variant is not caught, and a quiet exploration that finds failures.
//!
//! The reference runtime is the one `cargo build --workspace` puts beside this binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::child;
use child::{output_within, text};

fn reference_runtime() -> PathBuf {
    let beside = Path::new(env!("CARGO_BIN_EXE_killpoint")).with_file_name("killpoint-runtime");
    assert!(beside.is_file(), "{} is not built: run `cargo build --workspace` first", beside.display());
    beside
}

/// `program` with its output piped (for [`output_within`] to read).
fn piped(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// `killpoint` with `TMPDIR` (where runs keep their directories) set to `tmp`.
fn killpoint(tmp: &Path) -> Command {
    let mut command = piped(Path::new(env!("CARGO_BIN_EXE_killpoint")));
    command.env("TMPDIR", tmp);
    command
}

const CHARGE: &str =
    "[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n";

/// `cargo install --path harness` installs `killpoint` alone, with no reference runtime beside it
/// and no checkout: `list variants` still answers, with the variants of the runtime it was built
/// with, and that list is the runtime's own (`variants.tsv` kept in step with `src/broken.rs`).
#[test]
fn list_variants_needs_no_reference_runtime_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("killpoint");
    let built = Path::new(env!("CARGO_BIN_EXE_killpoint"));
    std::fs::hard_link(built, &alone).or_else(|_| std::fs::copy(built, &alone).map(|_| ())).unwrap();
    let mut command = piped(&alone);
    command.args(["list", "variants"]).current_dir(dir.path());
    let output = output_within(command, Duration::from_secs(30), "`killpoint list variants` installed alone");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "expected the built-in list, found exit {:?}:\n{stdout}\n{stderr}", output.status);

    let mut asked = piped(&reference_runtime());
    asked.arg("--list-broken");
    let listed = output_within(asked, Duration::from_secs(30), "`killpoint-runtime --list-broken`");
    let names = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.contains('\t'))
            .filter_map(|l| l.split_once('\t'))
            .map(|(n, _)| n.to_owned())
            .collect()
    };
    let from_runtime: Vec<String> = names(&text(&listed).0);
    let shown: Vec<String> =
        stdout.lines().skip(1).filter_map(|l| l.split_whitespace().next()).map(str::to_owned).collect();
    assert_eq!(
        shown, from_runtime,
        "the built-in list differs from the runtime's: regenerate it with\n  target/debug/killpoint-runtime --list-broken > harness/src/model/variants.tsv"
    );
    assert_eq!(
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model/variants.tsv")).unwrap(),
        text(&listed).0,
        "regenerate with: target/debug/killpoint-runtime --list-broken > harness/src/model/variants.tsv"
    );
}

/// A `[[catches]]` whose variant passes the scenario says what was expected, what was found
/// (nothing), and tells the run as passed — not as "failed:" with no ✗ line under it.
#[test]
fn a_catch_not_caught_says_what_was_expected_and_what_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("uncaught.toml");
    // `no-backoff` retries a failed delivery at once; no delivery fails here, so it does nothing wrong.
    let scenario = format!(
        "description = \"one charge\"\n\n{CHARGE}\n[[fault]]\nat = \"after_dispatch\"\noperation = \"charge\"\n\n[[catches]]\nbroken = \"no-backoff\"\ninvariants = [\"delivery_backoff\"]\n"
    );
    std::fs::write(&file, scenario).unwrap();
    let mut command = killpoint(dir.path());
    command.arg("run").arg(&file).arg("--runtime").arg(reference_runtime());
    let output = output_within(command, Duration::from_secs(120), "`killpoint run` of an uncaught catch");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let said = "NOT CAUGHT: the reference runtime with `--broken no-backoff` was expected to violate delivery_backoff in `uncaught`; not caught: delivery_backoff (it violated nothing)";
    assert!(stderr.contains(said), "expected `{said}`, found:\n{stderr}");
    assert!(
        stderr.contains("scenario `uncaught` (") && stderr.contains(") passed: no invariant was violated"),
        "{stderr}"
    );
    assert!(!stderr.contains(") failed:"), "a run with no violation is not told as failed:\n{stderr}");
}

/// `explore --quiet` that finds failures prints the summary and where the failures are, in a
/// few lines however many fail; the stories are in the written cases' artifacts.
#[test]
fn a_quiet_exploration_that_fails_is_short() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("workload.toml");
    std::fs::write(&file, format!("description = \"one charge\"\n\n{CHARGE}")).unwrap();
    let out = dir.path().join("out");
    let mut command = killpoint(dir.path());
    command.arg("explore").arg(&file).args(["--quiet", "--jobs", "2", "--out"]).arg(&out);
    command.arg("--runtime").arg(reference_runtime()).args(["--", "--broken", "blind-retry"]);
    let output = output_within(command, Duration::from_secs(300), "`killpoint explore --quiet`");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let written = std::fs::read_dir(&out).unwrap().count();
    assert!(written > 1, "expected several failing cases written to {}, found {written}", out.display());
    let lines = stdout.lines().count() + stderr.lines().count();
    assert!(lines <= 12, "expected a short account of {written} failures, found {lines} lines:\n{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("{written} failing case(s) written to {}", out.display())), "{stderr}");
}
