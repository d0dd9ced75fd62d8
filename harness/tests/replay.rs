//! Replays that reproduce: every kind of failing case (`certify`, `run`, `explore`, `random`; with
//! the probe, as a black box, under the tracer) keeps its whole evidence and a `rerun.sh` that,
//! run on its own, fails the same way; a failure found with operations in flight says how often it
//! came back instead of promising it will; and a long `--artifacts-dir` leaves room for the sockets.
//!
//! Failures come from the reference runtime's broken variants (`--broken NAME`, src/broken.rs).
//! Every command runs in a process group of its own, under a deadline, with `TMPDIR` in the test's
//! own temp dir, so nothing it keeps outlives the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A whole CLI command here takes a few seconds; this leaves room for a busy machine.
const DEADLINE: Duration = Duration::from_secs(240);

use crate::child;
use child::text;

fn killpoint_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_killpoint"))
}

fn reference_runtime() -> PathBuf {
    let beside = killpoint_binary().with_file_name("killpoint-runtime");
    assert!(beside.is_file(), "{} is not built: run `cargo build --workspace` first", beside.display());
    beside
}

/// Runs `command` in `cwd` (in a process group of its own, `TMPDIR` set to `tmp`, `PATH` without
/// killpoint's directory) to its end within [`DEADLINE`]; past it, kills the whole group, reaps it
/// and fails, saying what it waited for.
fn output_within(mut command: Command, cwd: &Path, tmp: &Path, what: &str) -> Output {
    command.current_dir(cwd).env("TMPDIR", tmp).env("PATH", "/usr/bin:/bin").env_remove("KILLPOINT");
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    child::output_within(command, DEADLINE, what)
}

/// A JSON certificate's one scenario: its name, status and the invariants it violated.
fn certificate(path: &Path) -> (String, String, BTreeSet<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("no certificate at {}: {e}", path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let scenarios = json["scenarios"].as_array().expect("a scenarios array");
    assert_eq!(scenarios.len(), 1, "one scenario expected in {text}");
    let violated = scenarios[0]["violations"]
        .as_array()
        .expect("a violations array")
        .iter()
        .map(|v| v["invariant"].as_str().expect("an invariant name").to_owned())
        .collect();
    let name = scenarios[0]["name"].as_str().expect("a name").to_owned();
    (name, scenarios[0]["status"].as_str().expect("a status").to_owned(), violated)
}

/// The words after `marker` up to `end`, split at ", ": how a failure's line names the invariants
/// it violated.
fn names_between(text: &str, marker: &str, end: &str) -> BTreeSet<String> {
    let at = text.find(marker).unwrap_or_else(|| panic!("no `{marker}` in:\n{text}")) + marker.len();
    let rest = &text[at..];
    let end = rest.find(end).unwrap_or_else(|| panic!("no `{end}` after `{marker}` in:\n{text}"));
    rest[..end].split(", ").map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

/// The directory after `artifacts kept at ` in `text`.
fn kept_dir(text: &str) -> PathBuf {
    let marker = "artifacts kept at ";
    let at = text.find(marker).unwrap_or_else(|| panic!("no `{marker}` in:\n{text}")) + marker.len();
    PathBuf::from(text[at..].split([' ', '\n']).next().unwrap())
}

/// What a kept failure holds: the whole evidence, not only the data dir.
fn assert_whole(dir: &Path) {
    for file in [
        "report.html",
        "trace.jsonl",
        "rerun.sh",
        "ledger/provider.jsonl",
        "logs/incarnation-1.stdout.log",
        "logs/incarnation-1.stderr.log",
    ] {
        assert!(dir.join(file).is_file(), "the kept failure {} has no {file}", dir.display());
    }
    assert!(dir.join("data").is_dir(), "the kept failure {} has no data/", dir.display());
}

/// One failing case kind: the command that fails, and how its output names the kept directory
/// and the invariants it violated.
struct Kind {
    name: &'static str,
    args: Vec<String>,
    /// The flags of its mode that `rerun.sh` must repeat.
    mode: &'static [&'static str],
    /// From the command's working dir and output: the case's name, its kept dir, and the
    /// invariants it violated.
    found: fn(&Path, &str, &str) -> Found,
}

/// A failing case's name, kept directory and violated invariants.
type Found = (String, PathBuf, BTreeSet<String>);

fn from_certificate(cwd: &Path, _: &str, _: &str) -> Found {
    let (name, status, violated) = certificate(&cwd.join("first.json"));
    assert_eq!(status, "fail", "the case to replay did not fail");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("first.json")).unwrap()).unwrap();
    (name, PathBuf::from(json["scenarios"][0]["artifacts"].as_str().expect("kept artifacts")), violated)
}

/// The written case, and the replay line printed for it: `reproduce: /abs/killpoint run …`.
fn from_explore(cwd: &Path, _: &str, stderr: &str) -> Found {
    let written = names_between(stderr, "written to ", "\n");
    let file = cwd.join(written.iter().next().expect("a written case"));
    let toml = std::fs::read_to_string(&file).unwrap();
    assert_absolute_program(&names_between(stderr, "reproduce: ", " "));
    let name = file.file_stem().unwrap().to_string_lossy().into_owned();
    (name, kept_dir(stderr), names_between(&toml, ", violated ", ".\n"))
}

fn from_random(_: &Path, stdout: &str, _: &str) -> Found {
    assert_absolute_program(&names_between(stdout, "rerun it with:\n  ", " "));
    let name = names_between(stdout, "written to out/", ".toml\n").into_iter().next().expect("a written file");
    (name, kept_dir(stdout), names_between(stdout, "violating ", ", written to "))
}

/// A printed replay line's first word is the killpoint binary by absolute path.
fn assert_absolute_program(words: &BTreeSet<String>) {
    let program = words.iter().next().expect("a program");
    assert!(Path::new(program).is_absolute() && Path::new(program).is_file(), "the replay line runs `{program}`");
}

/// `one.toml`: one charge killed at `after_dispatch`; `late.toml`: killed at `after_result_write`
/// (which a black box reaches only under the tracer); `workload.toml`: the charge without kills.
/// `late.toml`'s charge never settles under `split-outbox` (its delivery is lost), so its deadline
/// is short: 1 s (3 s under the tracer), not the default 20 s (60 s), for the run and its rerun.
fn write_scenarios(dir: &Path) {
    let charge =
        "[[operation]]\nid = \"charge\"\ntool = \"charge_card\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\n";
    std::fs::write(dir.join("workload.toml"), format!("description = \"one charge\"\n\n{charge}")).unwrap();
    for (file, at, deadline) in
        [("one.toml", "after_dispatch", ""), ("late.toml", "after_result_write", "deadline_seconds = 1\n")]
    {
        let text = format!(
            "description = \"one charge killed at {at}\"\n{deadline}\n{charge}\n[[fault]]\nat = \"{at}\"\noperation = \"charge\"\n"
        );
        std::fs::write(dir.join(file), text).unwrap();
    }
}

fn kinds() -> Vec<Kind> {
    let words = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    vec![
        Kind {
            name: "certify with the probe",
            args: words(
                "certify --scenarios . --no-standard --filter one --json first.json --artifacts-dir kept -- --broken blind-retry",
            ),
            mode: &[],
            found: from_certificate,
        },
        Kind {
            name: "run as a black box",
            args: words("run one.toml --no-probe --json first.json --artifacts-dir kept -- --broken blind-retry"),
            mode: &["--no-probe"],
            found: from_certificate,
        },
        Kind {
            name: "run traced, as a black box",
            args: words(
                "run late.toml --points syscalls --no-probe --json first.json --artifacts-dir kept -- --broken split-outbox",
            ),
            mode: &["--points syscalls", "--no-probe"],
            found: from_certificate,
        },
        Kind {
            name: "explore with the probe",
            args: words("explore workload.toml --first-failure --jobs 1 --out out -- --broken blind-retry"),
            mode: &[],
            found: from_explore,
        },
        Kind {
            name: "explore traced",
            args: words(
                "explore workload.toml --points syscalls --no-probe --first-failure --jobs 1 --out out -- --broken blind-retry",
            ),
            mode: &["--points syscalls", "--no-probe"],
            found: from_explore,
        },
        // Under the tracer (a machine crash is one), where a black box's kill lands exactly. Untraced,
        // a kill at `after_provider_success` lands wherever the runtime is when the provider answers:
        // a loaded stress run once drew and shrank such a case, whose one confirming run passed, so
        // nothing was kept (`run as a black box` keeps the untraced kind, at a world-held kill).
        Kind {
            name: "random as a black box",
            args: words("random --cases 10 --seed 1 --no-probe --crash machine --out out -- --broken blind-retry"),
            mode: &["--no-probe", "--crash machine"],
            found: from_random,
        },
    ]
}

/// One test per failing case kind: under `cargo test` a binary runs two tests at a time, and six
/// kinds in one test ran one after another (149 s). Each kind that does not replay fails its own
/// test, saying why; `every_failing_case_kind_has_its_own_test` keeps every kind tried.
macro_rules! replay_tests {
    ($($test:ident => $kind:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                replays(&kind($kind));
            }
        )*
        /// The kinds a test above tries, by name.
        const TRIED: &[&str] = &[$($kind),*];
    };
}

replay_tests! {
    certify_with_the_probe_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "certify with the probe",
    run_as_a_black_box_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "run as a black box",
    run_traced_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "run traced, as a black box",
    explore_with_the_probe_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "explore with the probe",
    explore_traced_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "explore traced",
    random_as_a_black_box_keeps_its_evidence_and_its_rerun_sh_fails_the_same_way => "random as a black box",
}

/// Every kind is tried, each by a test of its own: a kind added to [`kinds`] without one fails here.
#[test]
fn every_failing_case_kind_has_its_own_test() {
    let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
    assert_eq!(names, TRIED, "every failing case kind needs its line in `replay_tests!`");
}

fn kind(name: &str) -> Kind {
    kinds().into_iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no failing case kind `{name}`"))
}

/// `kind` fails, keeps its whole evidence, and its `rerun.sh` fails with the same invariants.
fn replays(kind: &Kind) {
    let runtime = reference_runtime();
    {
        let tmp = tempfile::tempdir().unwrap();
        let cwd = tmp.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        write_scenarios(&cwd);
        let mut first = Command::new(killpoint_binary());
        first.args(&kind.args[..1]).arg("--runtime").arg(&runtime).args(&kind.args[1..]);
        let output = output_within(first, &cwd, tmp.path(), kind.name);
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(1), "{}: expected a failure:\n{stdout}\n{stderr}", kind.name);
        let (name, dir, violated) = (kind.found)(&cwd, &stdout, &stderr);
        assert!(!violated.is_empty(), "{}: no invariant named as violated:\n{stdout}\n{stderr}", kind.name);
        assert_whole(&dir);

        let script = std::fs::read_to_string(dir.join("rerun.sh")).unwrap();
        let line = script.lines().find(|l| l.starts_with("exec ")).expect("an exec line");
        let program = killpoint_binary().canonicalize().unwrap();
        assert!(line.contains(&program.display().to_string()), "{}: rerun.sh names {line}", kind.name);
        for flag in kind.mode {
            assert!(line.contains(flag), "{}: rerun.sh drops `{flag}`: {line}", kind.name);
        }
        let mut rerun = Command::new("/bin/sh");
        rerun.arg(dir.join("rerun.sh")).args(["--json", "again.json", "--artifacts-dir", "again"]);
        let output = output_within(rerun, &cwd, tmp.path(), &format!("{}: rerun.sh", kind.name));
        let (named, status, again) = certificate(&cwd.join("again.json"));
        let (stdout, stderr) = text(&output);
        assert_eq!(
            (named.as_str(), status.as_str(), &again),
            (name.as_str(), "fail", &violated),
            "{}: rerun.sh did not fail the same way:\n{script}\n{stdout}\n{stderr}",
            kind.name
        );
    }
}

/// A failure found with two operations in flight may need an interleaving its file does not pin:
/// explore replays the written case and says how often it came back, never a bare "reproduce".
#[test]
fn a_failure_found_with_operations_in_flight_says_how_often_its_replays_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let op = |id: &str, tool: &str| {
        format!(
            "[[operation]]\nid = \"{id}\"\ntool = \"{tool}\"\ndestinations = [\"ledger\"]\nexpect = \"succeeded\"\nwave = 1\n"
        )
    };
    let scenario =
        format!("description = \"two in flight\"\n\n{}\n{}", op("charge", "charge_card"), op("status", "set_status"));
    std::fs::write(cwd.join("wave.toml"), scenario).unwrap();
    let mut explore = Command::new(killpoint_binary());
    explore.args(["explore", "wave.toml", "--first-failure", "--jobs", "1", "--out", "out", "--runtime"]);
    explore.arg(reference_runtime()).args(["--", "--broken", "blind-retry"]);
    let output = output_within(explore, &cwd, tmp.path(), "explore of a wave");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "expected a failure:\n{stdout}\n{stderr}");
    assert!(!stderr.contains("reproduce:"), "a concurrent failure promised to reproduce:\n{stderr}");
    let line = stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("reproduced "))
        .unwrap_or_else(|| panic!("no `reproduced k of N replays` line:\n{stderr}"));
    let (counts, command) = line.split_once(": ").unwrap_or_else(|| panic!("no command after the counts: {line}"));
    let words: Vec<&str> = counts.split(' ').collect();
    let (k, n) = match words[..] {
        [k, "of", n, "replays"] => (k.parse::<u32>().unwrap(), n.parse::<u32>().unwrap()),
        _ => panic!("expected `reproduced k of N replays: COMMAND`, found `reproduced {line}`"),
    };
    assert!(n >= 1 && k <= n, "reproduced {k} of {n}");
    let program = command.split(' ').next().unwrap();
    assert!(Path::new(program).is_absolute() && Path::new(program).is_file(), "replay names `{program}`");
}

/// The wave explored over system calls against `--broken blind-retry` in `cwd` (written to
/// `out/`), with `flags`; the output.
fn explore_the_wave(cwd: &Path, tmp: &Path, flags: &[&str]) -> (String, String) {
    let wave = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/concurrent_wave.toml");
    let mut explore = Command::new(killpoint_binary());
    explore.arg("explore").arg(&wave).args(TRACED).args(flags).args(["--out", "out", "--runtime"]);
    explore.arg(reference_runtime()).args(["--", "--broken", "blind-retry"]);
    let output = output_within(explore, cwd, tmp, "explore of the wave over system calls");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "expected a failure:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

const TRACED: [&str; 3] = ["--points", "syscalls", "--no-probe"];

/// `killpoint run` of a written case, traced, against `--broken broken`: its certificate's
/// (name, status, violated) and its output. `i` tells its certificate from the others'.
fn run_case(
    cwd: &Path,
    tmp: &Path,
    case: &Path,
    i: usize,
    broken: &str,
) -> ((String, String, BTreeSet<String>), String, String) {
    let mut run = Command::new(killpoint_binary());
    let json = format!("replay-{}-{i}.json", case.file_stem().unwrap().to_string_lossy());
    run.arg("run").arg(case).args(TRACED).args(["--json", &json, "--runtime"]);
    run.arg(reference_runtime()).args(["--", "--broken", broken]);
    let output = output_within(run, cwd, tmp, "a run of the written case");
    let (stdout, stderr) = text(&output);
    (certificate(&cwd.join(&json)), stdout, stderr)
}

/// Runs `case` (written with `--broken blind-retry`) 10 times, two at a time as a busy machine
/// would: each starts from its kept state and fails as written. Then once for another runtime:
/// the state is not used, and the first line says so.
fn replays_10_of_10(cwd: &Path, tmp: &Path, case: &Path) {
    assert!(case.with_extension("state").join("state.json").is_file(), "no state kept beside {}", case.display());
    let found = names_between(&std::fs::read_to_string(case).unwrap(), ", violated ", ".\n");
    let replays: Vec<_> = std::thread::scope(|scope| {
        let pairs: Vec<_> = (0..5)
            .map(|i| {
                let run = move |i| run_case(cwd, tmp, case, i, "blind-retry");
                [scope.spawn(move || run(2 * i)), scope.spawn(move || run(2 * i + 1))]
            })
            .collect();
        pairs.into_iter().flatten().map(|h| h.join().unwrap()).collect()
    });
    for ((_, status, violated), stdout, stderr) in &replays {
        assert!(
            stdout.starts_with("starting from the crash state kept in "),
            "{}: the replay did not start from the kept state:\n{stdout}\n{stderr}",
            case.display()
        );
        assert_eq!(
            (status.as_str(), violated),
            ("fail", &found),
            "{}: a replay went otherwise:\n{stdout}\n{stderr}",
            case.display()
        );
    }
    let (_, stdout, _) = run_case(cwd, tmp, case, 10, "no-write-ahead");
    assert!(
        stdout.starts_with("running the whole workload: the crash state beside the file is not used ("),
        "a state kept for `--broken blind-retry` used for `--broken no-write-ahead`:\n{stdout}"
    );
}

/// The written cases in `dir`.
fn written_cases(dir: &Path) -> Vec<PathBuf> {
    let cases = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
    cases.filter(|p| p.extension().is_some_and(|x| x == "toml")).collect()
}

/// A failure found under the tracer with operations in flight replays every time from its written
/// file: explore keeps the crash state the case failed from beside it (`CASE.state/`), and `run`
/// starts there; explore's own replays start there too, and say so. Re-running the prefix instead
/// reached such cases' failures 0 to 10 times in 10 (the other operations elsewhere at the kill);
/// a state kept for another runtime is not used, and says so.
#[test]
fn a_failure_found_under_the_tracer_with_operations_in_flight_replays_10_of_10_from_its_written_file() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let (_, stderr) = explore_the_wave(&cwd, tmp.path(), &["--first-failure"]);
    // Every replay from the kept state came back: no "reproduced k of N".
    assert!(!stderr.contains("reproduced "), "a replay from the kept state went otherwise:\n{stderr}");
    let told: Vec<&str> = stderr.lines().filter_map(|l| l.trim().strip_prefix("reproduce (")).collect();
    assert!(!told.is_empty(), "no `reproduce (…)` line:\n{stderr}");
    for line in &told {
        let counts = line.split(')').next().unwrap();
        let counts = counts.strip_prefix("from the crash state kept beside it: ").unwrap_or_else(|| panic!("{line}"));
        let (k, n) =
            counts.strip_suffix(" replays").and_then(|c| c.split_once(" of ")).unwrap_or_else(|| panic!("{line}"));
        assert!(k == n && k != "0", "explore's replays from the kept state: {line}\n{stderr}");
    }
    let cases = written_cases(&cwd.join("out"));
    assert!(!cases.is_empty(), "no case written:\n{stderr}");
    for case in &cases {
        replays_10_of_10(&cwd, tmp.path(), case);
    }
}

/// The `after_submit` race with operations in flight: the harness kills as it reads one
/// operation's `202`, while the others are wherever the runtime's threads took them. Explore
/// re-runs such a case (no record run stops there) and keeps the state its kill left; from it
/// the case replays 10 of 10, where re-running the prefix reached its failure 0 to 7 times in 10.
/// Whether an exploration finds such a failure is itself that race: up to 3 explorations are
/// asked for one (each of 7 by hand found one or two).
#[test]
fn the_after_submit_race_with_operations_in_flight_replays_10_of_10_from_its_written_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut explored = Vec::new();
    let found = (0..3).find_map(|i| {
        let cwd = tmp.path().join(format!("work-{i}"));
        std::fs::create_dir(&cwd).unwrap();
        let (stdout, _) = explore_the_wave(&cwd, tmp.path(), &["--quiet"]);
        let cases = written_cases(&cwd.join("out"));
        let race: Vec<PathBuf> = cases.into_iter().filter(|c| c.to_string_lossy().contains(".after_submit.")).collect();
        explored.push(stdout);
        (!race.is_empty()).then_some((cwd, race))
    });
    let (cwd, race) =
        found.unwrap_or_else(|| panic!("3 explorations found no after_submit failure:\n{}", explored.join("\n")));
    for case in &race {
        replays_10_of_10(&cwd, tmp.path(), case);
    }
}

/// The probe's and the tracer's sockets live in a short directory of their own: a long
/// `--artifacts-dir` (a CI workspace's) leaves every scenario runnable, with the probe and under
/// the tracer.
#[test]
fn a_long_artifacts_dir_leaves_room_for_the_sockets() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    write_scenarios(&cwd);
    let long = cwd.join(format!("{}/{}", "a-very-long-ci-workspace-path".repeat(2), "artifacts-of-this-job".repeat(2)));
    assert!(long.as_os_str().len() >= 100, "{} is not long", long.display());
    for mode in [&[][..], &["--points", "syscalls", "--no-probe"][..]] {
        let mut certify = Command::new(killpoint_binary());
        certify.args(["certify", "--scenarios", ".", "--no-standard", "--filter", "one", "--artifacts-dir"]);
        certify.arg(&long).args(mode).arg("--runtime").arg(reference_runtime());
        let output = output_within(certify, &cwd, tmp.path(), "certify with a long --artifacts-dir");
        let (stdout, stderr) = text(&output);
        assert_eq!(output.status.code(), Some(0), "certify {mode:?} did not pass:\n{stdout}\n{stderr}");
    }
}

/// Where even the sockets' own directory is too long for a Unix socket (a huge `TMPDIR`), one
/// message says which path and the limit, before anything runs.
#[test]
fn a_socket_path_too_long_even_in_tmpdir_is_one_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let huge = tmp.path().join("t".repeat(120));
    std::fs::create_dir(&huge).unwrap();
    let mut certify = Command::new(killpoint_binary());
    certify.args(["certify", "--filter", "after_dispatch", "--runtime"]).arg(reference_runtime());
    let output = output_within(certify, tmp.path(), &huge, "certify with a huge TMPDIR");
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(2), "expected a usage error:\n{stdout}\n{stderr}");
    assert!(stderr.contains(&huge.display().to_string()) && stderr.contains("108"), "{stderr}");
    assert!(!stdout.contains("certifying"), "it ran anyway:\n{stdout}");
}

/// Issue 32 item 3: the replay of a failure of a runtime started through a virtualenv's
/// `bin/python` (a link to the base interpreter, which cannot import what the virtualenv has),
/// with its script given relative to where killpoint ran, fails the same way from another
/// directory. The kit is importable through the virtualenv only (a `.pth` file), and the runtime
/// strips the planted `_killpoint` from its calls: `arguments_unchanged`, in every run.
#[test]
fn a_venv_runtimes_replay_from_another_directory_fails_the_same_way() {
    let (home, elsewhere, tmp) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let venv = home.path().join("venv");
    let made = output_within(
        {
            let mut c = Command::new("python3");
            c.args(["-m", "venv", "--without-pip"]).arg(&venv);
            c
        },
        home.path(),
        tmp.path(),
        "python3 -m venv --without-pip",
    );
    assert!(made.status.success(), "python3 -m venv: {:?}", text(&made));
    let purelib = output_within(
        {
            let mut c = Command::new(venv.join("bin/python"));
            c.args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]);
            c
        },
        home.path(),
        tmp.path(),
        "the virtualenv's site-packages",
    );
    let site = PathBuf::from(text(&purelib).0.trim());
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe-kit/python");
    std::fs::write(site.join("killpoint_kit.pth"), format!("{}\n", kit.canonicalize().unwrap().display())).unwrap();
    std::fs::write(
        home.path().join("runtime.py"),
        "import killpoint_shell, killpoint_shell.execution as ex\n\
         real = ex.http\n\
         def stripped(method, url, body=None, key=None):\n\
         \x20   if isinstance(body, dict) and isinstance(body.get('arguments'), dict):\n\
         \x20       body = dict(body, arguments={k: v for k, v in body['arguments'].items() if k != '_killpoint'})\n\
         \x20   return real(method, url, body, key)\n\
         ex.http = stripped\n\
         killpoint_shell.serve()\n",
    )
    .unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/provider_rejects.toml");
    let mut first = Command::new(killpoint_binary());
    first.arg("run").arg(&scenario).args([
        "--runtime",
        "venv/bin/python",
        "--artifacts-dir",
        "kept",
        "--",
        "runtime.py",
    ]);
    let failed = output_within(first, home.path(), tmp.path(), "killpoint run of the venv runtime");
    let (out, err) = text(&failed);
    let said = format!("{out}\n{err}");
    assert_eq!(failed.status.code(), Some(1), "{said}");
    assert!(said.contains("arguments_unchanged") && !said.contains("✗ ready"), "{said}");
    let kept: Vec<PathBuf> =
        std::fs::read_dir(home.path().join("kept")).unwrap().flatten().map(|e| e.path().join("rerun.sh")).collect();
    assert_eq!(kept.len(), 1, "one kept run: {kept:?}");
    let replayed = output_within(
        {
            let mut c = Command::new("sh");
            c.arg(&kept[0]);
            c
        },
        elsewhere.path(),
        tmp.path(),
        "rerun.sh from another directory",
    );
    let (out, err) = text(&replayed);
    let again = format!("{out}\n{err}");
    assert_eq!(replayed.status.code(), Some(1), "{again}\n{}", std::fs::read_to_string(&kept[0]).unwrap());
    assert!(
        again.contains("arguments_unchanged") && !again.contains("✗ ready"),
        "the replay failed otherwise:\n{again}"
    );
}

/// `explore --schedules` (issue 33) on langgraph#8039's shape (`tests/fixtures/race_step_runtime.py`):
/// the bad order is written with its seed pinned, every replay of it fails (the schedule holds it),
/// and the kept `rerun.sh` fails the same way; the `--twin`, ordered by design, passes every seed.
#[test]
fn explore_over_schedules_writes_the_bad_order_with_its_seed_and_its_rerun_sh_fails_the_same_way() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/race_step_runtime.py");
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path().join("work");
    std::fs::create_dir(&cwd).unwrap();
    let scenario = "description = \"one charge, killed after its step's completion record\"\ndeadline_seconds = 20\n\n\
        [[operation]]\nid = \"charge\"\ntool = \"charge_card\"\nexpect = \"succeeded\"\n\n\
        [[syscall_fault]]\nkind = \"unlink\"\nwhen = \"after\"\noccurrence = 1\nincarnation = 1\n";
    std::fs::write(cwd.join("race.toml"), scenario).unwrap();
    let explore = |twin: bool| {
        let mut command = Command::new(killpoint_binary());
        command.args(["explore", "race.toml", "--schedules", "6", "--out", "out", "--runtime"]).arg(&fixture);
        if twin {
            command.args(["--", "--twin"]);
        }
        output_within(command, &cwd, tmp.path(), "explore over schedules")
    };

    let output = explore(false);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(1), "expected the bad order found:\n{stdout}\n{stderr}");
    // The seeds run at once (`--jobs`, twice the cores by default), and are told in seed order.
    let told: Vec<u64> =
        stderr.lines().filter_map(|l| l.strip_prefix("  seed ")?.split(':').next()?.parse().ok()).collect();
    assert_eq!(told, (1..=6).collect::<Vec<u64>>(), "each seed told once, in order:\n{stderr}");
    let written = names_between(&stderr, "written to ", "\n");
    assert_eq!(written.len(), 1, "the seeds that went the bad order are one case:\n{stderr}");
    let file = cwd.join(written.iter().next().unwrap());
    let toml = std::fs::read_to_string(&file).unwrap();
    assert!(toml.contains("[schedule]\nseed = "), "the written case pins its seed:\n{toml}");
    let violated = names_between(&toml, ", violated ", ".\n");
    assert!(violated.contains("at_most_once"), "the duplicate charge: {violated:?}");
    assert!(file.with_extension("state").join("state.json").is_file(), "no crash state kept beside {}", file.display());
    let line = stderr.lines().find_map(|l| l.trim().strip_prefix("reproduce (")).expect("a replay line");
    assert!(
        line.starts_with("from the crash state kept beside it: 5 of 5 replays): "),
        "the kept state replays every time: {line}"
    );
    assert!(stdout.contains("distinct orders of the runtime's crash-point calls: 2"), "both orders covered:\n{stdout}");

    let dir = kept_dir(&stderr);
    assert_whole(&dir);
    let mut rerun = Command::new("/bin/sh");
    rerun.arg(dir.join("rerun.sh")).args(["--json", "again.json", "--artifacts-dir", "again"]);
    let output = output_within(rerun, &cwd, tmp.path(), "rerun.sh of a scheduled case");
    let (_, status, again) = certificate(&cwd.join("again.json"));
    let (stdout, stderr) = text(&output);
    assert_eq!((status.as_str(), &again), ("fail", &violated), "rerun.sh went otherwise:\n{stdout}\n{stderr}");
    // Which thread's call went when: in the certificate of the failure, and drawn in its report.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join("again.json")).unwrap()).unwrap();
    let first = &json["scenarios"][0]["schedule"]["incarnations"][0];
    assert_eq!(first["killed"], true, "the kill came after the first incarnation's last decision: {first}");
    let threads = first["threads"].as_array().map_or(0, Vec::len);
    assert!(threads >= 2, "the step's two racing threads, each named: {first}");
    assert!(first["decisions"].as_array().is_some_and(|d| !d.is_empty()), "{first}");
    let report = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(report.contains("schedule: which thread went when"), "the kept report draws the schedule");

    let output = explore(true);
    let (stdout, stderr) = text(&output);
    assert_eq!(output.status.code(), Some(0), "the twin failed a schedule:\n{stdout}\n{stderr}");
    assert!(stdout.contains("schedules run: 6 (6 passed, 0 failed)"), "{stdout}");
}
