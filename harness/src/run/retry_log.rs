//! The runtime's structured retry lines (CONTRACT.md §11): one JSON object on a line of its
//! stderr per retry, saying whether it repeats the execution or only a delivery. Read by the
//! checker (a label must agree with the ledgers) and by the report's timeline.

use crate::run::driver::Run;
use serde::Deserialize;

/// One retry line, written with any spacing (`serde_json`'s compact form or Python's
/// `json.dumps`), other fields allowed.
#[derive(Debug, Clone, Deserialize)]
pub struct RetryLine {
    pub(crate) log: String,
    pub retry: RetryKind,
    pub operation_id: String,
    pub destination: Option<String>,
    pub attempt: u64,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryKind {
    /// A new provider attempt of the operation.
    Execution,
    /// A resend of a recorded result to one consumer.
    Delivery,
}

impl RetryLine {
    /// `line` as a retry line, if it is one: JSON whose `log` is `"retry"`, with the fields the
    /// contract names. Anything else (the runtime's other output, a line a kill cut short) is not.
    pub fn parse(line: &str) -> Option<RetryLine> {
        serde_json::from_str::<RetryLine>(line).ok().filter(|l| l.log == "retry")
    }
}

/// Every retry line of `stderr` (the run's `logs/stderr.log`), with the incarnation whose section
/// of the log holds it: the harness writes `--- killpoint: incarnation N ---` before each start
/// (0 for lines before the first mark). A resumed outlived incarnation writes into a later
/// incarnation's section: who wrote a line is certain only in a run without one.
pub fn by_incarnation(stderr: &str) -> Vec<(u32, RetryLine)> {
    let mut incarnation = 0;
    let mut lines = Vec::new();
    for line in stderr.lines() {
        if let Some(number) = line.strip_prefix("--- killpoint: incarnation ").and_then(|r| r.strip_suffix(" ---")) {
            incarnation = number.parse().unwrap_or(incarnation);
        } else if let Some(retry) = RetryLine::parse(line) {
            lines.push((incarnation, retry));
        }
    }
    lines
}

/// The run's stderr log, as text (empty when it cannot be read).
pub fn stderr_of(run: &Run) -> String {
    let bytes = std::fs::read(run.artifacts_path().join("logs").join("stderr.log")).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_given_the_incarnation_whose_section_holds_it() {
        let stderr = concat!(
            "--- killpoint: incarnation 1 ---\n",
            "{\"log\":\"retry\",\"retry\":\"execution\",\"operation_id\":\"a\",\"attempt\":2}\n",
            "some other output\n",
            "--- killpoint: incarnation 2 ---\n",
            "{\"log\": \"retry\", \"retry\": \"delivery\", \"operation_id\": \"a\", \"destination\": \"ledger\", \"attempt\": 3}\n",
        );
        let lines = by_incarnation(stderr);
        let seen: Vec<(u32, RetryKind, u64)> = lines.iter().map(|(n, l)| (*n, l.retry, l.attempt)).collect();
        assert_eq!(seen, vec![(1, RetryKind::Execution, 2), (2, RetryKind::Delivery, 3)]);
    }
}
