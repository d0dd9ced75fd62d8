//! The fingerprint of a crash state: what a SIGKILL at one instant would leave behind, for
//! `killpoint explore` to run only one of the crash points that leave the same.

use crate::scenario::Scenario;
use fake_tool::World;
use std::path::Path;

/// What a SIGKILL would leave behind at one instant: the bytes of every file under the data dir
/// and the fake world's state. Two instants with the same fingerprint are the same crash state:
/// the next incarnation starts from the same disk and the same world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub data: u64,
    /// Entries of the world's ledger that change what the world will answer: provider calls,
    /// consumer receipts, revocations — and lookups and policy checks only where a fault counts
    /// them. A plain lookup or policy check is a question, not a change.
    pub world: usize,
}

impl Fingerprint {
    /// Taken while the runtime is blocked on the probe. SQLite's shared-memory index (`*-shm`)
    /// is left out: it is rebuilt from the journal on open, not state. Files that change while
    /// being read (another task's) still change the hash, which only ever prunes less.
    pub fn take(data: &Path, world: &World, scenario: &Scenario) -> Fingerprint {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        let mut stack = vec![data.to_owned()];
        let mut files = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path)
                } else if !path.to_string_lossy().ends_with("-shm") {
                    files.push(path)
                }
            }
        }
        files.sort();
        for file in files {
            file.hash(&mut hasher);
            std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
        }
        let counts_lookups = !scenario.lookup_faults.is_empty();
        let counts_checks = !scenario.policy_faults.is_empty();
        // Taken at every announcement: counted in place, not on a copy of the ledger.
        let world = world.count_entries(|e| match e.event {
            fake_tool::Event::ProviderLookup { .. } => counts_lookups,
            fake_tool::Event::PolicyCheck { .. } => counts_checks,
            _ => true,
        });
        Fingerprint { data: hasher.finish(), world }
    }
}
