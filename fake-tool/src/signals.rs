//! The fake world's monitoring signals (the seed's "duplicate keys seen by providers and
//! consumers"), served at `GET /metrics` in the Prometheus text format and read from the ledger.
//!
//! A duplicate key is one that arrives again: at the provider, a call whose tool and idempotency
//! key an earlier call carried; at a consumer, a delivery whose key that destination received
//! before. Duplicates are not violations — a runtime that resends after a crash must resend with
//! the same key — but a graph of them shows how often recovery leaned on deduplication.

use crate::ledger::{Entry, Event};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashSet};

/// Duplicate keys seen, by who saw them: `provider`, or `consumer <destination>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DuplicateKeys {
    pub provider: u64,
    /// By destination; every destination that received anything is present.
    pub consumers: BTreeMap<String, u64>,
}

impl DuplicateKeys {
    pub fn of(entries: &[Entry]) -> DuplicateKeys {
        let mut seen: HashSet<(bool, &str, &str)> = HashSet::new();
        let mut out = DuplicateKeys::default();
        for entry in entries {
            match &entry.event {
                Event::ProviderCall { tool, idempotency_key: Some(key), .. } if !seen.insert((true, tool, key)) => {
                    out.provider += 1;
                }
                Event::ConsumerReceipt { destination, idempotency_key, .. } => {
                    let count = out.consumers.entry(destination.clone()).or_default();
                    if let Some(key) = idempotency_key
                        && !seen.insert((false, destination, key))
                    {
                        *count += 1;
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// `killpoint_world_duplicate_keys_total{seen_by="provider"}` and
    /// `{seen_by="consumer",destination="…"}`.
    pub fn to_prometheus(&self) -> String {
        let mut registry = Registry::default();
        let family = Family::<Vec<(String, String)>, Counter>::default();
        family.get_or_create(&vec![("seen_by".to_owned(), "provider".to_owned())]).inc_by(self.provider);
        for (destination, n) in &self.consumers {
            family
                .get_or_create(&vec![
                    ("seen_by".to_owned(), "consumer".to_owned()),
                    ("destination".to_owned(), destination.clone()),
                ])
                .inc_by(*n);
        }
        registry.register(
            "killpoint_world_duplicate_keys",
            "Idempotency keys that arrived again, at the provider and at each consumer",
            family,
        );
        let mut text = String::new();
        encode(&mut text, &registry).expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Effect, Response};

    fn call(seq: u64, key: &str) -> Entry {
        Entry {
            seq,
            at_micros: 0,
            incarnation: None,
            event: Event::ProviderCall {
                tool: "charge_card".into(),
                operation: Some("charge".into()),
                idempotency_key: Some(key.into()),
                arguments: None,
                call: 1,
                effect: Effect::Replayed("r".into()),
                response: Response::Sent(200),
                result: None,
            },
        }
    }

    fn receipt(seq: u64, destination: &str, key: &str) -> Entry {
        Entry {
            seq,
            at_micros: 0,
            incarnation: None,
            event: Event::ConsumerReceipt {
                destination: destination.into(),
                operation: Some("charge".into()),
                idempotency_key: Some(key.into()),
                applied: true,
                status: 202,
                payload: serde_json::Value::Null,
            },
        }
    }

    #[test]
    fn a_key_that_arrives_again_is_counted_where_it_arrived() {
        let entries = [
            call(1, "charge"),
            call(2, "charge"),
            call(3, "other"),
            receipt(4, "ledger", "charge"),
            receipt(5, "mailer", "charge"),
            receipt(6, "ledger", "charge"),
        ];
        let keys = DuplicateKeys::of(&entries);
        assert_eq!(keys.provider, 1);
        assert_eq!(keys.consumers, BTreeMap::from([("ledger".into(), 1), ("mailer".into(), 0)]));
        let text = keys.to_prometheus();
        assert!(text.contains("killpoint_world_duplicate_keys_total{seen_by=\"provider\"} 1"), "{text}");
        assert!(
            text.contains("killpoint_world_duplicate_keys_total{seen_by=\"consumer\",destination=\"ledger\"} 1"),
            "{text}"
        );
    }
}
