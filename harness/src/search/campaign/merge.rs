//! Shards of one campaign merged into one record (`killpoint merge`): refused when they are not
//! of one campaign (an explore's and a random search's, another workload or seed, runtime,
//! contract or mode, another shard count, a shard twice), and said when one is missing.

use super::{Campaign, Identity, Search, Shard};

/// The shards' cases in one record. `Err` says why they cannot be one campaign, or which shards
/// are missing (a partial merge would read as a campaign that ran fewer cases).
pub fn merge(shards: Vec<Campaign>) -> Result<Campaign, String> {
    let Some(first) = shards.first() else { return Err("expected at least one shard's record, found none".into()) };
    let identity = first.identity.clone();
    let mut seen: Vec<Shard> = Vec::new();
    for (i, campaign) in shards.iter().enumerate() {
        let Some(shard) = campaign.shard else {
            return Err(format!(
                "record {} is not a shard (searched without --shard, or merged already): expected `explore --shard K/N --json` or `random --shard K/N --json` records",
                i + 1
            ));
        };
        if let Some(why) = differs(&identity, &campaign.identity) {
            return Err(format!(
                "record {} (shard {}/{}) is not of the same campaign as record 1: {why}",
                i + 1,
                shard.k,
                shard.n
            ));
        }
        if let Some(other) = seen.first().filter(|s| s.n != shard.n) {
            return Err(format!(
                "expected shards of {} (record 1), found shard {}/{} in record {}",
                other.n,
                shard.k,
                shard.n,
                i + 1
            ));
        }
        if seen.contains(&shard) {
            return Err(format!("shard {}/{} is given twice (record {})", shard.k, shard.n, i + 1));
        }
        seen.push(shard);
    }
    let n = seen[0].n;
    let missing: Vec<String> =
        (1..=n).filter(|k| !seen.iter().any(|s| s.k == *k)).map(|k| format!("{k}/{n}")).collect();
    if !missing.is_empty() {
        return Err(format!("shard(s) {} missing: {} of {n} given", missing.join(", "), seen.len()));
    }
    seen.sort();
    let cases = shards.into_iter().flat_map(|c| c.cases).collect();
    let mut merged = Campaign::new(identity, None, cases);
    merged.merged = seen;
    Ok(merged)
}

/// The first field in which `other` is not `first`'s campaign, said with both values.
fn differs(first: &Identity, other: &Identity) -> Option<String> {
    let (a, b) = (&first.search, &other.search);
    if a.kind() != b.kind() {
        return Some(format!(
            "it is a `killpoint {}` record, where record 1 is a `killpoint {}` one: a campaign is one search",
            b.kind(),
            a.kind()
        ));
    }
    let common: [(&str, String, String); 7] = [
        ("killpoint version", first.killpoint_version.clone(), other.killpoint_version.clone()),
        ("contract", first.contract.clone(), other.contract.clone()),
        ("runtime", first.runtime.clone(), other.runtime.clone()),
        ("runtime arguments", first.runtime_args.join(" "), other.runtime_args.join(" ")),
        ("runtime binary (SHA-256)", format!("{:?}", first.runtime_sha256), format!("{:?}", other.runtime_sha256)),
        ("crash", first.crash.clone(), other.crash.clone()),
        ("probe", first.probe.to_string(), other.probe.to_string()),
    ];
    let searched = search_fields(a).into_iter().zip(search_fields(b)).map(|((what, x), (_, y))| (what, x, y));
    common
        .into_iter()
        .chain(searched)
        .find(|(_, a, b)| a != b)
        .map(|(what, a, b)| format!("{what}: `{b}`, where record 1 has `{a}`"))
}

/// A search's own fields, named, as text (two searches of one kind give the same names).
fn search_fields(search: &Search) -> Vec<(&'static str, String)> {
    match search {
        Search::Explore { workload, workload_sha256, points, depth } => vec![
            ("workload", workload.clone()),
            ("workload file (SHA-256)", format!("{workload_sha256:?}")),
            ("points", points.clone()),
            ("depth", depth.to_string()),
        ],
        Search::Random { seed, cases } => {
            vec![("campaign seed", seed.to_string()), ("cases a shard", cases.to_string())]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CaseOutcome, CaseRecord};
    use super::*;

    fn identity() -> Identity {
        Identity {
            killpoint_version: "0.1.0".into(),
            contract: "killpoint-contract/9".into(),
            runtime: "/bin/runtime".into(),
            runtime_args: Vec::new(),
            runtime_sha256: Some("cd".into()),
            crash: "process".into(),
            probe: true,
            search: Search::Explore {
                workload: "after_dispatch".into(),
                workload_sha256: Some("ab".into()),
                points: "boundaries".into(),
                depth: 1,
            },
        }
    }

    fn shard(k: u64, n: u64, names: &[&str]) -> Campaign {
        let case = |name: &&str| CaseRecord {
            name: (*name).into(),
            status: if name.contains("fail") { CaseOutcome::Fail } else { CaseOutcome::Pass },
            violated: Vec::new(),
            duration_ms: 10,
            file: None,
            artifacts: None,
        };
        Campaign::new(identity(), Some(Shard { k, n }), names.iter().map(case).collect())
    }

    #[test]
    fn shards_of_one_campaign_merge_into_every_case_once_and_a_missing_one_is_named() {
        let merged = merge(vec![shard(2, 3, &["b", "fail.d"]), shard(1, 3, &["c"]), shard(3, 3, &["a"])]).unwrap();
        let names: Vec<&str> = merged.cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "fail.d"]);
        assert_eq!((merged.totals.cases, merged.totals.failed, merged.totals.duration_ms), (4, 1, 40));
        assert_eq!(merged.merged, [Shard { k: 1, n: 3 }, Shard { k: 2, n: 3 }, Shard { k: 3, n: 3 }]);
        assert_eq!(merged.shard, None);
        let missing = merge(vec![shard(1, 3, &["a"]), shard(3, 3, &["b"])]).unwrap_err();
        assert_eq!(missing, "shard(s) 2/3 missing: 2 of 3 given");
    }

    #[test]
    fn records_of_another_campaign_or_shard_count_are_refused_by_what_differs() {
        let mut other = shard(2, 2, &["b"]);
        other.identity.runtime_args = vec!["--broken".into(), "blind-retry".into()];
        let refused = merge(vec![shard(1, 2, &["a"]), other]).unwrap_err();
        assert!(refused.contains("runtime arguments: `--broken blind-retry`, where record 1 has ``"), "{refused}");
        let counts = merge(vec![shard(1, 2, &["a"]), shard(2, 3, &["b"])]).unwrap_err();
        assert!(counts.contains("expected shards of 2"), "{counts}");
        let twice = merge(vec![shard(1, 2, &["a"]), shard(1, 2, &["a"])]).unwrap_err();
        assert!(twice.contains("shard 1/2 is given twice"), "{twice}");
        let mut seeded = shard(2, 2, &["b"]);
        seeded.identity.search = Search::Random { seed: 7, cases: 10 };
        let mixed = merge(vec![shard(1, 2, &["a"]), seeded.clone()]).unwrap_err();
        assert!(
            mixed.contains("it is a `killpoint random` record, where record 1 is a `killpoint explore` one"),
            "{mixed}"
        );
        let mut other_seed = seeded.clone();
        (other_seed.shard, other_seed.identity.search) =
            (Some(Shard { k: 1, n: 2 }), Search::Random { seed: 8, cases: 10 });
        let seeds = merge(vec![other_seed, seeded]).unwrap_err();
        assert!(seeds.contains("campaign seed: `7`, where record 1 has `8`"), "{seeds}");
        let unsharded = Campaign::new(identity(), None, Vec::new());
        assert!(merge(vec![unsharded]).unwrap_err().contains("is not a shard"));
    }
}
