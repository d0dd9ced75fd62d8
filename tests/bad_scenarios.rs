//! Every way a scenario file can be wrong gets a message naming the file, line and column, what
//! was expected and (for a misspelt word) the closest valid one — never a panic. The messages are
//! what a user reads, so they are pinned by snapshots.

use killpoint::Scenario;
use std::path::Path;

const GOOD: &str = r#"description = "one charge, killed after dispatch"

[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[fault]]
at = "after_dispatch"
operation = "charge"
"#;

fn error(text: &str) -> String {
    match Scenario::parse(Path::new("scenarios/bad.toml"), text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// `GOOD` with `from` replaced by `to` (which must occur).
fn with(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "{from:?} is not in the good scenario");
    GOOD.replacen(from, to, 1)
}

#[test]
fn the_good_scenario_parses() {
    Scenario::parse(Path::new("scenarios/bad.toml"), GOOD).unwrap();
}

#[test]
fn malformed_toml() {
    insta::assert_snapshot!(error(&with("id = \"charge\"", "id = \"charge")));
}

#[test]
fn unknown_key() {
    insta::assert_snapshot!(error(&with("destinations", "destination")));
}

#[test]
fn unknown_top_level_key() {
    insta::assert_snapshot!(error(&format!("deadline = 5\n{GOOD}")));
}

#[test]
fn unknown_boundary_suggests_the_closest() {
    insta::assert_snapshot!(error(&with("\"after_dispatch\"", "\"after_dispach\"")));
}

#[test]
fn unknown_tool_suggests_the_closest() {
    insta::assert_snapshot!(error(&with("\"charge_card\"", "\"charge_cards\"")));
}

#[test]
fn fault_on_an_operation_that_is_not_in_the_workload() {
    insta::assert_snapshot!(error(&with("operation = \"charge\"", "operation = \"refund\"")));
}

#[test]
fn missing_expectation() {
    insta::assert_snapshot!(error(&with("expect = \"succeeded\"\n", "")));
}

#[test]
fn unknown_expectation() {
    insta::assert_snapshot!(error(&with("\"succeeded\"", "\"success\"")));
}

#[test]
fn missing_description() {
    insta::assert_snapshot!(error(&with("description = \"one charge, killed after dispatch\"\n", "")));
}

#[test]
fn empty_workload() {
    insta::assert_snapshot!(error("description = \"nothing\"\n"));
}

#[test]
fn duplicate_operation_id() {
    let text = format!("{GOOD}\n[[operation]]\nid = \"charge\"\ntool = \"send_sms\"\nexpect = \"succeeded\"\n");
    insta::assert_snapshot!(error(&text));
}

#[test]
fn bad_operation_id() {
    insta::assert_snapshot!(error(&with("id = \"charge\"", "id = \"charge card\"")));
}

#[test]
fn occurrence_zero() {
    insta::assert_snapshot!(error(&format!("{GOOD}occurrence = 0\n")));
}

#[test]
fn delivery_fault_without_destination() {
    insta::assert_snapshot!(error(&with("\"after_dispatch\"", "\"after_delivery_send\"")));
}

#[test]
fn delivery_fault_on_an_unknown_destination() {
    insta::assert_snapshot!(error(&format!(
        "{}destination = \"ledgr\"\n",
        with("\"after_dispatch\"", "\"after_delivery_send\"")
    )));
}

#[test]
fn provider_only_action_at_a_probe_boundary() {
    insta::assert_snapshot!(error(&format!(
        "{}action = \"fail\"\n",
        with("\"after_dispatch\"", "\"before_dispatch\"")
    )));
}

#[test]
fn bad_revocation() {
    insta::assert_snapshot!(error(&format!("{GOOD}revoke = [\"destination:mailer\"]\n")));
}

#[test]
fn impossible_delivery_kill_for_an_operation_that_never_succeeds() {
    let text =
        with("expect = \"succeeded\"", "expect = \"paused\"").replace("\"after_dispatch\"", "\"after_result_write\"");
    insta::assert_snapshot!(error(&text));
}

#[test]
fn impossible_success_kill_for_an_operation_that_may_give_up() {
    let text = with("expect = \"succeeded\"", "expect = \"succeeded_or_gave_up\"")
        .replace("\"after_dispatch\"", "\"after_delivery_send\"\ndestination = \"ledger\"");
    insta::assert_snapshot!(error(&text));
}

#[test]
fn impossible_second_call_of_a_tool_without_lookup() {
    let text = with("\"charge_card\"", "\"send_sms\"");
    insta::assert_snapshot!(error(&format!("{text}occurrence = 2\n")));
}

#[test]
fn impossible_refusal_without_a_revocation() {
    insta::assert_snapshot!(error(&with("\"after_dispatch\"", "\"after_policy_revocation\"")));
}

#[test]
fn the_new_fault_grammar_parses() {
    let text = format!(
        "{GOOD}action = \"reject\"\nstatus = 409\nrevoke = [\"tool\", \"operation\"]\n\n[[lookup_fault]]\noperation = \"charge\"\ntimes = 2\naction = \"drop\"\n\n[[policy_fault]]\nsubject = \"destination\"\ntimes = 1\naction = \"delay\"\ndelay_ms = 5\n"
    );
    let scenario = Scenario::parse(Path::new("scenarios/bad.toml"), &text).unwrap();
    assert!(!scenario.faults[0].effect, "a reject never applies the effect");
    assert_eq!(scenario.faults[0].status, Some(409));
    assert_eq!(scenario.lookup_faults.len(), 1);
    assert_eq!(scenario.policy_faults.len(), 1);
}

#[test]
fn reject_with_effect() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"reject\"\neffect = true\n")));
}

#[test]
fn fail_with_a_client_error_status() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"fail\"\nstatus = 422\n")));
}

#[test]
fn status_with_an_action_that_sends_none() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"cut\"\nstatus = 200\n")));
}

#[test]
fn unknown_provider_action() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"truncate\"\n")));
}

#[test]
fn revoked_twice() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"fail\"\nrevoke = [\"tool\", \"tool\"]\n")));
}

const LOOKUP: &str = "\n[[lookup_fault]]\noperation = \"charge\"\ntimes = 1\naction = \"fail\"\n";

#[test]
fn lookup_fault_on_a_tool_without_lookup() {
    insta::assert_snapshot!(error(&format!("{}{LOOKUP}", with("\"charge_card\"", "\"send_sms\""))));
}

#[test]
fn lookup_fault_without_times() {
    insta::assert_snapshot!(error(&format!("{GOOD}{}", LOOKUP.replace("times = 1\n", ""))));
}

#[test]
fn lookup_fault_times_zero() {
    insta::assert_snapshot!(error(&format!("{GOOD}{}", LOOKUP.replace("times = 1", "times = 0"))));
}

#[test]
fn lookup_fault_that_would_lie() {
    insta::assert_snapshot!(error(&format!("{GOOD}{LOOKUP}status = 404\n")));
}

#[test]
fn lookup_fault_that_kills() {
    insta::assert_snapshot!(error(&format!("{GOOD}{}", LOOKUP.replace("\"fail\"", "\"kill\""))));
}

#[test]
fn lookup_fault_twice_for_one_operation() {
    insta::assert_snapshot!(error(&format!("{GOOD}{LOOKUP}{LOOKUP}")));
}

#[test]
fn revocation_at_a_lookup_fault_is_refused() {
    insta::assert_snapshot!(error(&format!("{GOOD}{LOOKUP}revoke = [\"tool\"]\n")));
}

const POLICY: &str = "\n[[policy_fault]]\naction = \"fail\"\n";

#[test]
fn policy_fault_on_an_unknown_operation() {
    insta::assert_snapshot!(error(&format!("{GOOD}{POLICY}operation = \"charg\"\n")));
}

#[test]
fn policy_fault_on_an_unknown_subject() {
    insta::assert_snapshot!(error(&format!("{GOOD}{POLICY}subject = \"operation\"\n")));
}

#[test]
fn policy_fault_delay_without_delay_ms() {
    insta::assert_snapshot!(error(&format!("{GOOD}{}", POLICY.replace("\"fail\"", "\"delay\""))));
}

#[test]
fn policy_fault_times_zero() {
    insta::assert_snapshot!(error(&format!("{GOOD}{POLICY}times = 0\n")));
}

const CONSUMER: &str = "\n[[consumer_fault]]\ndestination = \"ledger\"\n";

#[test]
fn consumer_fault_times_zero() {
    insta::assert_snapshot!(error(&format!("{GOOD}{CONSUMER}times = 0\n")));
}

#[test]
fn unreadable_file() {
    let err = Scenario::load(Path::new("scenarios/does-not-exist.toml")).unwrap_err().to_string();
    assert!(err.starts_with("scenarios/does-not-exist.toml: cannot read the scenario file:"), "{err}");
}

#[test]
fn after_submit_with_a_second_occurrence() {
    insta::assert_snapshot!(error(&format!("{}occurrence = 2\n", with("\"after_dispatch\"", "\"after_submit\""))));
}

#[test]
fn after_submit_with_an_attempt() {
    insta::assert_snapshot!(error(&format!("{}attempt = 1\n", with("\"after_dispatch\"", "\"after_submit\""))));
}

#[test]
fn after_submit_with_a_destination() {
    insta::assert_snapshot!(error(&format!(
        "{}destination = \"ledger\"\n",
        with("\"after_dispatch\"", "\"after_submit\"")
    )));
}

#[test]
fn after_submit_without_a_kill() {
    insta::assert_snapshot!(error(&format!("{}action = \"drop\"\n", with("\"after_dispatch\"", "\"after_submit\""))));
}

#[test]
fn freeze_where_no_commit_follows() {
    insta::assert_snapshot!(error(&format!("{GOOD}action = \"freeze\"\n")));
}

#[test]
fn freeze_with_a_revocation() {
    insta::assert_snapshot!(error(&format!(
        "{}action = \"freeze\"\nrevoke = [\"tool\"]\n",
        with("\"after_dispatch\"", "\"before_dispatch\"")
    )));
}

#[test]
fn freeze_beside_other_operations_in_flight() {
    let text = format!(
        "{}action = \"freeze\"\n",
        GOOD.replace("at = \"after_dispatch\"", "at = \"before_dispatch\"").replace("[[fault]]", "wave = 1\n[[operation]]\nid = \"other\"\ntool = \"set_status\"\nexpect = \"succeeded\"\nwave = 1\n\n[[fault]]")
    );
    let err = error(&text);
    assert!(err.contains("needs `charge` alone in its wave"), "{err}");
}

// Issue 11: mistakes in the file that used to be accepted and then blamed on the runtime.

#[test]
fn effect_away_from_after_dispatch() {
    insta::assert_snapshot!(error(&with("at = \"after_dispatch\"", "at = \"before_dispatch\"\neffect = true")));
}

#[test]
fn two_faults_at_one_place() {
    insta::assert_snapshot!(error(&format!("{GOOD}\n[[fault]]\nat = \"after_dispatch\"\noperation = \"charge\"\n")));
}

#[test]
fn deadline_of_zero_seconds() {
    insta::assert_snapshot!(error(&format!("deadline_seconds = 0\n{GOOD}")));
}

#[test]
fn a_destination_listed_twice() {
    insta::assert_snapshot!(error(&with("[\"ledger\"]", "[\"ledger\", \"mailer\", \"ledger\"]")));
}

#[test]
fn catches_an_unknown_invariant() {
    insta::assert_snapshot!(error(&format!(
        "{GOOD}\n[[catches]]\nbroken = \"blind-retry\"\ninvariants = [\"no_blind_retries\"]\n"
    )));
}

#[test]
fn catches_an_unknown_broken_variant() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let text = format!("{GOOD}\n[[catches]]\nbroken = \"blind-retyr\"\ninvariants = [\"no_blind_retry\"]\n");
    std::fs::write(&path, &text).unwrap();
    let scenario = Scenario::load(&path).unwrap();
    let known: Vec<killpoint::model::variants::Variant> = ["blind-retry", "fresh-key"]
        .into_iter()
        .map(|name| killpoint::model::variants::Variant { name: name.into(), description: String::new() })
        .collect();
    let shown = scenario.check_catches(&known).unwrap_err().to_string();
    insta::assert_snapshot!(shown.replace(&dir.path().display().to_string(), "scenarios"));
}
