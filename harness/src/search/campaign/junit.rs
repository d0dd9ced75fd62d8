//! A campaign as JUnit XML: one suite, a test case per explored case (`explore.<workload>`) or
//! drawn schedule (`random.<seed>`), a failure naming the invariants violated, a case whose kill
//! point was not reached skipped (nothing was tested there), never passed.

use super::{Campaign, CaseOutcome, Search};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

pub(super) fn to_junit(campaign: &Campaign) -> String {
    let identity = &campaign.identity;
    let kind = identity.search.kind();
    let mut suite = TestSuite::new(format!("killpoint {kind} {}", identity.search.subject()));
    let shard = campaign.shard.map(|s| format!("{}/{}", s.k, s.n));
    let merged: Vec<String> = campaign.merged.iter().map(|s| format!("{}/{}", s.k, s.n)).collect();
    let shard_property = format!("{kind}.shard");
    let (classname, searched) = match &identity.search {
        Search::Explore { workload, workload_sha256, points, depth } => (
            format!("explore.{workload}"),
            [
                ("workload.sha256", workload_sha256.clone().unwrap_or_default()),
                ("explore.mode", format!("{points} {} depth {depth}", identity.crash)),
            ],
        ),
        Search::Random { seed, cases } => (
            format!("random.{seed}"),
            [
                ("random.seed", seed.to_string()),
                ("random.mode", format!("{cases} case(s) a shard, {}", identity.crash)),
            ],
        ),
    };
    for (name, value) in [
        ("killpoint.version", identity.killpoint_version.clone()),
        ("killpoint.contract", identity.contract.clone()),
        ("runtime.path", identity.runtime.clone()),
        ("runtime.args", identity.runtime_args.join(" ")),
        ("runtime.sha256", identity.runtime_sha256.clone().unwrap_or_default()),
        (shard_property.as_str(), shard.unwrap_or_else(|| merged.join(","))),
    ]
    .into_iter()
    .chain(searched)
    {
        suite.add_property(Property::new(name, value));
    }
    for case in &campaign.cases {
        let status = match case.status {
            CaseOutcome::Pass | CaseOutcome::Partial => TestCaseStatus::success(),
            CaseOutcome::NotReached => {
                let mut status = TestCaseStatus::skipped();
                status.set_message("not reached: the run did not pass this kill point again; nothing was tested");
                status
            }
            CaseOutcome::Fail => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(format!("violated {}", case.violated.join(", ")));
                status
            }
        };
        let mut test = TestCase::new(case.name.clone(), status);
        test.set_classname(classname.clone());
        test.set_time(Duration::from_millis(case.duration_ms));
        let kept: Vec<String> = [("written to", &case.file), ("artifacts kept at", &case.artifacts)]
            .into_iter()
            .filter_map(|(what, path)| path.as_ref().map(|p| format!("{what} {p}")))
            .collect();
        if !kept.is_empty() {
            test.set_system_err(kept.join("\n"));
        }
        suite.add_test_case(test);
    }
    let total = Duration::from_millis(campaign.totals.duration_ms);
    suite.set_time(total);
    let mut report = Report::new("killpoint");
    report.set_time(total);
    report.add_test_suite(suite);
    report.to_string().expect("JUnit XML serialises")
}
