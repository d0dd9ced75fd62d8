//! Maps keyed by tuples, written as lists of `[key, value]` pairs: JSON keys are strings only,
//! and a world's snapshot kept on disk (beside a written case) holds maps keyed by (tool, key)
//! and (operation, destination). The harness keeps the tracer's
//! progress (keyed by (boundary, operation)) beside it the same way. Use as
//! `#[serde(with = "fake_tool::pairs")]`; the pairs' order is
//! the map's and means nothing.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::hash::Hash;

pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(
    map: &HashMap<K, V>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(map.iter())
}

pub fn deserialize<'de, K, V, D>(deserializer: D) -> Result<HashMap<K, V>, D::Error>
where
    K: Deserialize<'de> + Eq + Hash,
    V: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Ok(Vec::<(K, V)>::deserialize(deserializer)?.into_iter().collect())
}
