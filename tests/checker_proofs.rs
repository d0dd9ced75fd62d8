//! Invariants proven able to fail without a broken runtime: the mistake they catch is in the
//! scenario or the run, not in the runtime's recovery (see `PROVEN_ELSEWHERE` in
//! harness/src/judge/rules/table.rs; `settled` is proven by tests/hostile.rs).

use killpoint::{Invariant, RunOptions, Scenario, Target, run_scenario};
use std::path::{Path, PathBuf};

fn reference() -> Target {
    Target { program: PathBuf::from(env!("CARGO_BIN_EXE_killpoint-runtime")), args: Vec::new() }
}

/// A delivery fault at the third send of a delivery that succeeds at its first: the file is valid
/// (a consumer could have failed twice), but this run never gets there, and a boundary the run did
/// not pass through must not be certified.
#[test]
fn a_fault_the_run_never_reaches_fails_faults_reached() {
    let text = r#"
description = "the third send to the ledger never happens: the ledger accepts the first"

[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"

[[fault]]
at = "after_delivery_send"
operation = "charge"
destination = "ledger"
occurrence = 3
"#;
    let scenario = Scenario::parse(Path::new("unreached.toml"), text).expect("the file is valid");
    let (verdict, run) = run_scenario(&scenario, &reference(), &RunOptions::default()).unwrap();
    assert!(run.aborted.is_none(), "{:?}", run.aborted);
    let failed = verdict.failed_invariants();
    assert_eq!(failed.into_iter().collect::<Vec<_>>(), vec![Invariant::FaultsReached], "{:#?}", verdict.violations);
    let message = &verdict.violations[0].message;
    assert!(
        message.contains("`after_delivery_send` of `charge` -> ledger, occurrence 3")
            && message.contains("never reached"),
        "{message}"
    );
}
