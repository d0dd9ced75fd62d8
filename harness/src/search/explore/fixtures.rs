//! What the unit tests of the exploration share: a small workload and points of it.

use super::case::Workload;
use super::point::Point;
use crate::model::boundary::Boundary;
use crate::scenario::Scenario;
use std::path::Path;

pub(super) fn workload(text: &str) -> Workload {
    Workload::of(&Scenario::parse(Path::new("scenarios/w.toml"), text).expect("valid scenario"))
}

pub(super) const TWO: &str = r#"
description = "two at once"
[[operation]]
id = "sms"
tool = "send_sms"
destinations = ["mailer"]
expect = "succeeded"
wave = 1
[[operation]]
id = "charge"
tool = "charge_card"
expect = "paused"
wave = 1
[[fault]]
at = "after_dispatch"
operation = "charge"
revoke = ["tool"]
"#;

pub(super) fn point(at: Boundary, operation: &str, occurrence: u32) -> Point {
    Point { at, operation: operation.into(), occurrence, destination: None }
}
