//! The contract versions this harness certifies (CONTRACT.md, "Versions"): the current one, and
//! older ones a runtime may still declare, each with what it does not claim of the current one.
//!
//! A contract bump must not break every runtime written for the last version (issue 32): a runtime
//! that declares an older supported version is certified by that version's rules, with
//! `--contract`, and the certificate says which newer rules it did not claim.

use std::fmt;

/// A contract version this harness speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Version {
    /// `killpoint-contract/6`: everything of `/7` but tasks (section 12).
    V6,
    /// `killpoint-contract/7`: everything of `/8` but the duties through a server's faults
    /// (section 2, §2-9 to §2-13).
    V7,
    /// `killpoint-contract/8`: everything of `/9` but what a runtime owes after a restore
    /// (section 13, §13-1 to §13-5).
    V8,
    /// `killpoint-contract/9`: the current version.
    #[default]
    V9,
}

impl Version {
    /// The version a runtime is given unless told otherwise.
    pub const CURRENT: Version = Version::V9;
    pub const ALL: [Version; 4] = [Version::V6, Version::V7, Version::V8, Version::V9];

    pub const fn name(self) -> &'static str {
        match self {
            Version::V6 => "killpoint-contract/6",
            Version::V7 => "killpoint-contract/7",
            Version::V8 => "killpoint-contract/8",
            Version::V9 => "killpoint-contract/9",
        }
    }

    pub fn from_name(name: &str) -> Option<Version> {
        Version::ALL.into_iter().find(|v| v.name() == name)
    }

    /// Whether the runtime owes anything after a restore (section 13): a runtime of an older
    /// version is not run with `--crash restore`.
    pub fn has_restores(self) -> bool {
        self >= Version::V9
    }

    /// Whether operations may be tasks for the model (section 12).
    pub fn has_tasks(self) -> bool {
        self >= Version::V7
    }

    /// The rules of the current version it does not claim, and in a few words what they are.
    pub fn not_claimed(self) -> (&'static [&'static str], &'static str) {
        match self {
            Version::V6 => (
                &[
                    "§12-1", "§12-2", "§12-3", "§12-4", "§2-9", "§2-10", "§2-11", "§2-12", "§2-13", "§13-1", "§13-2",
                    "§13-3", "§13-4", "§13-5",
                ],
                "tasks for the model (section 12), the duties through a server's faults (section 2, §2-9 to §2-13), nor what is owed after a restore (section 13)",
            ),
            Version::V7 => (
                &["§2-9", "§2-10", "§2-11", "§2-12", "§2-13", "§13-1", "§13-2", "§13-3", "§13-4", "§13-5"],
                "duties through a server's faults (section 2, §2-9 to §2-13), nor what is owed after a restore (section 13)",
            ),
            Version::V8 => (
                &["§13-1", "§13-2", "§13-3", "§13-4", "§13-5"],
                "what is owed after a restore (section 13, §13-1 to §13-5)",
            ),
            Version::V9 => (&[], ""),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a ready line's `contract` means to this harness, run with `given`: its version, or the
/// one line that says why it is refused.
pub fn judge_declared(declared: &str, given: Version) -> Result<Version, String> {
    match Version::from_name(declared) {
        Some(v) if v == given => Ok(v),
        Some(older) if older < given => {
            let (_, what) = older.not_claimed();
            Err(format!(
                "declares `{declared}`, an older version this harness still certifies: run it with `--contract {declared}` (it then does not claim what `{given}` added: {what})"
            ))
        }
        _ => {
            let supported: Vec<&str> = Version::ALL.iter().map(|v| v.name()).collect();
            Err(format!(
                "speaks contract `{declared}`; this harness speaks `{given}` (it certifies {}; see CONTRACT.md)",
                supported.join(", ")
            ))
        }
    }
}

/// For a runtime that stopped before its ready line: when its last words name an older version
/// this harness certifies (a runtime refuses the version it is given, CONTRACT.md §2-1), the
/// option that certifies it.
pub fn hint(last_words: &str) -> Option<String> {
    let older = Version::ALL.into_iter().filter(|v| *v < Version::CURRENT).find(|v| last_words.contains(v.name()))?;
    let (_, what) = older.not_claimed();
    Some(format!(
        "it names `{older}`, an older version this harness still certifies: run it with `--contract {older}` (it then does not claim {what})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_supported_version_is_named_with_the_option_that_certifies_it() {
        assert_eq!(judge_declared("killpoint-contract/9", Version::V9), Ok(Version::V9));
        assert_eq!(judge_declared("killpoint-contract/8", Version::V8), Ok(Version::V8));
        assert_eq!(judge_declared("killpoint-contract/7", Version::V7), Ok(Version::V7));
        assert_eq!(judge_declared("killpoint-contract/6", Version::V6), Ok(Version::V6));
        let older = judge_declared("killpoint-contract/6", Version::V9).unwrap_err();
        assert!(older.contains("--contract killpoint-contract/6") && older.contains("section 12"), "{older}");
        let before = judge_declared("killpoint-contract/7", Version::V9).unwrap_err();
        assert!(before.contains("--contract killpoint-contract/7") && before.contains("§2-9 to §2-13"), "{before}");
        let last = judge_declared("killpoint-contract/8", Version::V9).unwrap_err();
        assert!(last.contains("--contract killpoint-contract/8") && last.contains("§13-1 to §13-5"), "{last}");
        let unknown = judge_declared("killpoint-contract/0", Version::V9).unwrap_err();
        assert!(unknown.contains("speaks contract `killpoint-contract/0`; this harness speaks `killpoint-contract/9`"));
        assert!(
            hint("KILLPOINT_CONTRACT is 'killpoint-contract/9', this runtime implements 'killpoint-contract/6' only")
                .is_some_and(|h| h.contains("--contract killpoint-contract/6"))
        );
        assert_eq!(hint("fatal: no database"), None);
        let newer = judge_declared("killpoint-contract/7", Version::V6).unwrap_err();
        assert!(newer.contains("this harness speaks `killpoint-contract/6`"), "{newer}");
    }
}
