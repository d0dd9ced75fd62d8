//! A stable fingerprint of a submission, so that a resubmitted `operation_id` can be told apart:
//! same body → the same operation again (200), different body → a conflict (409).
//!
//! The hash is stored and compared across incarnations and across builds of the runtime, so it
//! must never change for the same body. `std`'s `DefaultHasher` makes no such promise (its
//! algorithm may change between Rust releases), so this uses FNV-1a, a few lines with a fixed
//! definition. It is not cryptographic and need not be: it guards against honest mistakes (an
//! operation id reused for another request), not against an adversary.

use serde_json::Value;

use crate::model::Submission;

/// `fnv1a64:` followed by 16 hex digits.
/// `destinations` is a set (CONTRACT.md §3): its order is not part of the fingerprint.
pub fn request_hash(submission: &Submission) -> String {
    let mut value = serde_json::to_value(submission).expect("a submission is plain JSON");
    if let Some(Value::Array(destinations)) = value.get_mut("destinations") {
        destinations.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    let mut canonical = String::new();
    write_canonical(&value, &mut canonical);
    format!("fnv1a64:{:016x}", fnv1a64(canonical.as_bytes()))
}

/// JSON with object keys sorted and no whitespace, so that the same content always gives the
/// same text whatever order the client wrote its keys in.
fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by_key(|(key, _)| *key);
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        // Scalars have one spelling already.
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// 64-bit FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/).
fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(body: &str) -> Submission {
        serde_json::from_str(body).unwrap()
    }

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn key_order_does_not_matter_content_does() {
        let a = submission(
            r#"{"operation_id":"op-1","tenant":"t","actor":"a",
                "tool":{"name":"x","kind":"idempotent_by_key"},
                "arguments":{"amount":1,"note":"n"},"destinations":["d"]}"#,
        );
        let b = submission(
            r#"{"destinations":["d"],"arguments":{"note":"n","amount":1},
                "tool":{"kind":"idempotent_by_key","name":"x"},
                "actor":"a","tenant":"t","operation_id":"op-1"}"#,
        );
        let c = submission(
            r#"{"operation_id":"op-1","tenant":"t","actor":"a",
                "tool":{"name":"x","kind":"idempotent_by_key"},
                "arguments":{"amount":2,"note":"n"},"destinations":["d"]}"#,
        );
        assert_eq!(request_hash(&a), request_hash(&b));
        assert_ne!(request_hash(&a), request_hash(&c));
    }

    #[test]
    fn destinations_are_a_set() {
        let body = |destinations: &str| {
            submission(&format!(
                r#"{{"operation_id":"op-1","tenant":"t","actor":"a",
                    "tool":{{"name":"x","kind":"idempotent_by_key"}},"arguments":{{}},"destinations":{destinations}}}"#
            ))
        };
        assert_eq!(request_hash(&body(r#"["a","b"]"#)), request_hash(&body(r#"["b","a"]"#)));
        assert_ne!(request_hash(&body(r#"["a","b"]"#)), request_hash(&body(r#"["a"]"#)));
    }
}
