//! The `[restore]` table: how far behind the kill a restore's backup is (`--crash restore`; no
//! effect under the other crash models). One of `lag_syncs` (durable changes) and `lag_ms`.

use super::Source;
use crate::model::crash::Lag;
use crate::scenario::ScenarioError;
use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RestoreFile {
    lag_syncs: Option<Spanned<u32>>,
    lag_ms: Option<Spanned<u64>>,
}

impl Source<'_> {
    /// The lag a `[restore]` table names: exactly one of its two keys, at least 1.
    pub(super) fn restore(&self, table: Option<Spanned<RestoreFile>>) -> Result<Option<Lag>, ScenarioError> {
        let Some(table) = table else { return Ok(None) };
        let span = table.span();
        let file = table.into_inner();
        let at_least_one = |span, found: u64| {
            self.at(Some(span), format!("a restore's lag counts from 1: expected 1 or more, found {found}"))
        };
        match (file.lag_syncs, file.lag_ms) {
            (Some(_), Some(ms)) => Err(self.at(
                Some(ms.span()),
                "`[restore]` takes one lag: `lag_syncs` (durable changes before the kill) or `lag_ms`, not both".into(),
            )),
            (None, None) => Err(self.at(
                Some(span),
                "`[restore]` without a lag: expected `lag_syncs = N` (durable changes before the kill) or `lag_ms = T`"
                    .into(),
            )),
            (Some(n), None) if *n.get_ref() == 0 => Err(at_least_one(n.span(), 0)),
            (None, Some(ms)) if *ms.get_ref() == 0 => Err(at_least_one(ms.span(), 0)),
            (Some(n), None) => Ok(Some(Lag::Syncs(n.into_inner()))),
            (None, Some(ms)) => Ok(Some(Lag::Millis(ms.into_inner()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::crash::Lag;
    use crate::scenario::Scenario;
    use std::path::Path;

    const WORKLOAD: &str =
        "description = \"d\"\n[[operation]]\nid = \"op\"\ntool = \"charge_card\"\nexpect = \"succeeded\"\n";

    fn parse(restore: &str) -> Result<Scenario, String> {
        Scenario::parse(Path::new("s.toml"), &format!("{WORKLOAD}{restore}")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_restore_table_names_one_lag_of_at_least_one() {
        assert_eq!(parse("").unwrap().restore_lag, None);
        assert_eq!(parse("[restore]\nlag_syncs = 3\n").unwrap().restore_lag, Some(Lag::Syncs(3)));
        assert_eq!(parse("[restore]\nlag_ms = 250\n").unwrap().restore_lag, Some(Lag::Millis(250)));
        let both = parse("[restore]\nlag_syncs = 3\nlag_ms = 250\n").unwrap_err();
        assert!(both.starts_with("s.toml:8:10: `[restore]` takes one lag"), "{both}");
        let none = parse("[restore]\n").unwrap_err();
        assert!(none.starts_with("s.toml:6:1: `[restore]` without a lag"), "{none}");
        let zero = parse("[restore]\nlag_syncs = 0\n").unwrap_err();
        assert!(zero.starts_with("s.toml:7:13: a restore's lag counts from 1"), "{zero}");
        let unknown = parse("[restore]\nlag = 3\n").unwrap_err();
        assert!(unknown.starts_with("s.toml:7:1: unknown field `lag`"), "{unknown}");
    }

    #[test]
    fn a_restore_table_is_written_back_as_read() {
        let scenario = parse("[restore]\nlag_ms = 250\n").unwrap();
        let again = Scenario::parse(Path::new("s.toml"), &scenario.to_toml()).unwrap();
        assert_eq!(again.restore_lag, Some(Lag::Millis(250)));
    }
}
