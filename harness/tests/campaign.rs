//! Issue 35: an exploration split across machines comes back as one result. `explore --shard K/N
//! --json` ×N, then `killpoint merge`, gives the cases and verdicts one unsharded exploration
//! gives; a missing shard is named, and a shard of another campaign is refused. `random --shard
//! K/N --json` records merge the same way, and never with an exploration's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::child;
use child::{output_within, text};

const DEADLINE: Duration = Duration::from_secs(300);

fn killpoint(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_killpoint"));
    // Failing cases keep their runs in the temp dir: this test's own.
    command.current_dir(dir).env("TMPDIR", dir).stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

fn reference_runtime() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_killpoint")).with_file_name("killpoint-runtime")
}

/// `explore kill_while_reconciling` of a broken `variant` (blind-retry: 3 of its 11 cases fail),
/// as `shard` of the campaign or whole, its record in `json`; the exit code.
fn explore(dir: &Path, shard: Option<&str>, json: &str, variant: &str) -> Option<i32> {
    let mut command = killpoint(dir);
    command.args(["explore", "--quiet", "--jobs", "2", "--out", "found", "--json", json, "--runtime"]);
    command
        .arg(reference_runtime())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kill_while_reconciling.toml"));
    if let Some(shard) = shard {
        command.args(["--shard", shard]);
    }
    command.args(["--", "--broken", variant]);
    let output = output_within(command, DEADLINE, "explore kill_while_reconciling");
    output.status.code()
}

/// (name, status, violated) of every case of a record.
fn cases(dir: &Path, json: &str) -> Vec<(String, String, Vec<String>)> {
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join(json)).unwrap()).unwrap();
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    record["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let violated = c["violated"].as_array().map(|v| v.iter().map(text).collect()).unwrap_or_default();
            (text(&c["name"]), text(&c["status"]), violated)
        })
        .collect()
}

#[test]
fn shards_merged_give_what_one_exploration_gives_and_a_missing_one_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    assert_eq!(explore(dir, None, "whole.json", "blind-retry"), Some(1));
    for k in 1..=3 {
        // A shard may hold no failing case: 0 or 1.
        let code = explore(dir, Some(&format!("{k}/3")), &format!("shard{k}.json"), "blind-retry");
        assert!(matches!(code, Some(0 | 1)), "shard {k}/3: exit {code:?}");
    }
    let mut merge = killpoint(dir);
    merge.args(["merge", "shard1.json", "shard2.json", "shard3.json"]);
    merge.args(["--json", "merged.json", "--junit", "merged.xml"]);
    let merged = output_within(merge, DEADLINE, "merge");
    let (stdout, stderr) = text(&merged);
    assert_eq!(merged.status.code(), Some(1), "a failing case fails the merge: {stdout}\n{stderr}");
    let whole = cases(dir, "whole.json");
    assert!(whole.iter().any(|(_, status, _)| status == "fail") && whole.len() > 5, "{whole:?}");
    assert_eq!(cases(dir, "merged.json"), whole, "the merged shards against one exploration");
    let junit = std::fs::read_to_string(dir.join("merged.xml")).unwrap();
    let failing = whole.iter().filter(|(_, status, _)| status == "fail").count();
    assert!(
        junit.contains(&format!("tests=\"{}\"", whole.len())) && junit.contains(&format!("failures=\"{failing}\""))
    );

    let mut missing = killpoint(dir);
    missing.args(["merge", "shard1.json", "shard3.json"]);
    let missing = output_within(missing, DEADLINE, "merge without shard 2");
    let (stdout, stderr) = text(&missing);
    assert_eq!(missing.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("shard(s) 2/3 missing: 2 of 3 given"), "{stderr}");

    // Shard 2 of another runtime (another variant) is not of this campaign.
    let code = explore(dir, Some("2/3"), "other2.json", "fresh-delivery-key");
    assert!(matches!(code, Some(0 | 1)), "{code:?}");
    let mut mixed = killpoint(dir);
    mixed.args(["merge", "shard1.json", "other2.json", "shard3.json"]);
    let mixed = output_within(mixed, DEADLINE, "merge with another campaign's shard");
    let (stdout, stderr) = text(&mixed);
    assert_eq!(mixed.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("runtime arguments: `--broken fresh-delivery-key`"), "{stderr}");
}

/// `random --seed 11 --shard K/2 --cases 6` of the reference runtime (a broken `variant` of it),
/// its record in `json`.
fn random(dir: &Path, shard: &str, json: &str, variant: Option<&str>) -> (Option<i32>, String) {
    let mut command = killpoint(dir);
    command.args(["random", "--seed", "11", "--cases", "6", "--shard", shard, "--out", "found", "--json", json]);
    command.arg("--runtime").arg(reference_runtime());
    if let Some(variant) = variant {
        command.args(["--", "--broken", variant]);
    }
    let output = output_within(command, DEADLINE, "random --shard");
    let (stdout, stderr) = text(&output);
    (output.status.code(), format!("{stdout}\n{stderr}"))
}

#[test]
fn random_shards_merge_into_one_record_and_never_with_an_exploration() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut names = Vec::new();
    for k in 1..=2 {
        let (code, said) = random(dir, &format!("{k}/2"), &format!("random{k}.json"), Some("blind-retry"));
        // blind-retry fails the first draw that kills after a dispatch: 6 draws find one.
        assert_eq!(code, Some(1), "{said}");
        let cases = cases(dir, &format!("random{k}.json"));
        let (name, status, violated) = cases.last().expect("at least one draw").clone();
        assert_eq!(status, "fail", "the search stops at its first failing draw: {cases:?}");
        assert!(violated.contains(&"no_blind_retry".to_owned()), "{cases:?}");
        let seed = name.strip_prefix("random-").and_then(|n| n.split('.').next()).unwrap().to_owned();
        assert!(said.contains(&format!("shard {k}/2 of campaign seed 11: seed {seed}")), "{said}");
        assert!(dir.join(format!("found/random-{seed}.toml")).is_file(), "the shrunk case written:\n{said}");
        names.extend(cases);
    }
    let mut merge = killpoint(dir);
    merge.args(["merge", "random2.json", "random1.json", "--json", "merged.json", "--junit", "merged.xml"]);
    let merged = output_within(merge, DEADLINE, "merge of random shards");
    let (stdout, stderr) = text(&merged);
    assert_eq!(merged.status.code(), Some(1), "{stdout}\n{stderr}");
    names.sort();
    assert_eq!(cases(dir, "merged.json"), names, "every draw of both shards, once");
    let junit = std::fs::read_to_string(dir.join("merged.xml")).unwrap();
    assert!(junit.contains(&format!("tests=\"{}\" ", names.len())) && junit.contains("failures=\"2\""), "{junit}");

    // The correct runtime passes every draw of the same shard; its record is of another campaign.
    let (code, said) = random(dir, "2/2", "correct2.json", None);
    assert_eq!(code, Some(0), "{said}");
    let correct = cases(dir, "correct2.json");
    assert!(correct.len() == 6 && correct.iter().all(|(_, status, _)| status == "pass"), "{correct:?}");
    let mut other = killpoint(dir);
    other.args(["merge", "random1.json", "correct2.json"]);
    let other = output_within(other, DEADLINE, "merge of another runtime's random shard");
    let (stdout, stderr) = text(&other);
    assert_eq!(other.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("runtime arguments: ``, where record 1 has `--broken blind-retry`"), "{stderr}");

    // An exploration's shard 2/2 is of another search.
    assert!(matches!(explore(dir, Some("2/2"), "explore2.json", "blind-retry"), Some(0 | 1)));
    let mut mixed = killpoint(dir);
    mixed.args(["merge", "random1.json", "explore2.json"]);
    let mixed = output_within(mixed, DEADLINE, "merge of a random and an explore shard");
    let (stdout, stderr) = text(&mixed);
    assert_eq!(mixed.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("it is a `killpoint explore` record, where record 1 is a `killpoint random` one"),
        "{stderr}"
    );
}
