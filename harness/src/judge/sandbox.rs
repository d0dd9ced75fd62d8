//! `sandboxed`: the runtime writes only in its data dir (CONTRACT.md §2-2) and contacts only the
//! fake world and its declared services (§2-5). Judged from what the tracer saw (`tracer::Escape`,
//! the run's `escapes.jsonl`), so only in traced runs; an untraced run has no file and nothing is
//! judged. What is allowed beside the data dir, and why, is in `harness/src/tracer/escape.rs`.

use super::rules::breach::breach;
use super::verdict::Violation;
use crate::run::driver::Run;
use crate::tracer::{Escape, EscapeKind};

/// One violation per place the runtime escaped to, each naming the path or the address.
pub(super) fn sandboxed(run: &Run, violations: &mut Vec<Violation>) {
    for escape in crate::run::traced::escapes(run.artifacts_path()) {
        violations.push(violation(&escape));
    }
}

fn violation(escape: &Escape) -> Violation {
    let by = escape.program.as_deref().map(|p| format!(" (thread `{p}`)")).unwrap_or_default();
    match escape.kind {
        EscapeKind::Write => Violation::new(
            breach!(Sandboxed, "§2-2"),
            None,
            format!(
                "the runtime wrote outside KILLPOINT_DATA_DIR, at {} (`{}`{by}; CONTRACT.md §2-2: all durable state lives in the data dir; state kept elsewhere survives a restart the harness cannot see, and is left behind)",
                escape.path.as_deref().unwrap_or("a path it could not read"),
                escape.call,
            ),
            Vec::new(),
        ),
        EscapeKind::Contact => {
            let address = escape.address.map(|a| a.to_string()).unwrap_or_else(|| "an address".to_owned());
            let lookup = if escape.address.is_some_and(|a| a.port() == 53) { " — a name lookup (DNS)" } else { "" };
            Violation::new(
                breach!(Sandboxed, "§2-5"),
                None,
                format!(
                    "the runtime contacted {address}{lookup} by `{}`{by}, which is neither the fake world nor a declared service (CONTRACT.md §2-5: no other address)",
                    escape.call
                ),
                Vec::new(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violations_name_the_path_or_the_address_and_the_rule() {
        let write = Escape {
            kind: EscapeKind::Write,
            call: "mkdir".to_owned(),
            path: Some("/tmp/workflow-186".to_owned()),
            address: None,
            program: Some("worker".to_owned()),
        };
        let v = violation(&write);
        assert!(v.message.contains("/tmp/workflow-186") && v.message.contains("`mkdir`"), "{}", v.message);
        assert_eq!(v.rules(), ["§2-2"]);
        let lookup = Escape {
            kind: EscapeKind::Contact,
            call: "connect".to_owned(),
            path: None,
            address: Some("127.0.0.53:53".parse().unwrap()),
            program: None,
        };
        let v = violation(&lookup);
        assert!(v.message.contains("127.0.0.53:53 — a name lookup"), "{}", v.message);
        assert_eq!(v.rules(), ["§2-5"]);
    }
}
