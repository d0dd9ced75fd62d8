//! What the scenario folder's unit tests share: a small valid file and how they parse one.

use crate::scenario::{Scenario, ScenarioError};
use std::path::Path;

/// One operation with one fault: the smallest file most tests grow from.
pub(crate) const OK: &str = r#"
description = "one charge"
[[operation]]
id = "charge"
tool = "charge_card"
destinations = ["ledger"]
expect = "succeeded"
[[fault]]
at = "after_dispatch"
operation = "charge"
"#;

/// `text` as the file `scenarios/x.toml`.
pub(crate) fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse(Path::new("scenarios/x.toml"), text)
}
