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
                "`[restore]` without a lag: expected `lag_syncs = N` (durable changes before the kill) or `lag_ms = T`".into(),
            )),
            (Some(n), None) if *n.get_ref() == 0 => Err(at_least_one(n.span(), 0)),
            (None, Some(ms)) if *ms.get_ref() == 0 => Err(at_least_one(ms.span(), 0)),
            (Some(n), None) => Ok(Some(Lag::Syncs(n.into_inner()))),
            (None, Some(ms)) => Ok(Some(Lag::Millis(ms.into_inner()))),
        }
    }
}
