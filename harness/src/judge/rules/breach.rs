//! What one failed check breaks: its invariant, and the numbered rules of the contract that this
//! failure (not every failure of the invariant) breaks.
//!
//! An invariant checks several rules (`at_most_once` judges §4-4, §4-10, §5-1, …), but a check that
//! fails knows why it failed: two side effects break §5-1, a second attempt with no lookup between
//! two incarnations breaks §4-10. Blaming every rule of the invariant turned one bug into seventeen
//! "violated" rules (issue 32); each check names its own instead, with [`breach!`].
//!
//! A `Breach` can only name rules of the coverage table ([`super::table::RULES`]) that the table
//! says its invariant checks: [`Breach::new`] panics otherwise, and [`breach!`] calls it in a
//! constant, so a misspelt rule or one the invariant does not check is a compile error.

use super::table::{Check, RULES};
use crate::model::invariant::Invariant;

/// An invariant and the rules of the contract one of its checks, failing, breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breach {
    invariant: Invariant,
    rules: &'static [&'static str],
}

impl Breach {
    /// Panics unless every one of `rules` has a row in the coverage table whose invariants include
    /// `invariant`. Built through [`breach!`], in a constant: the panic is a compile error.
    pub const fn new(invariant: Invariant, rules: &'static [&'static str]) -> Breach {
        let mut i = 0;
        while i < rules.len() {
            if !checked_by(rules[i], invariant) {
                panic!(
                    "a breach names a rule that is not in the coverage table, or not checked there by its invariant"
                );
            }
            i += 1;
        }
        Breach { invariant, rules }
    }

    pub fn invariant(self) -> Invariant {
        self.invariant
    }

    /// The rules broken, as the contract tags them (`§4-10`). Empty where the failure breaks no
    /// rule of its own: `faults_reached` (the scenario was not exercised), and an operation that did
    /// not end `failed` as expected when the provider never refused it (`outcome.rs`).
    pub fn rules(self) -> &'static [&'static str] {
        self.rules
    }
}

/// `Breach::new(Invariant::$invariant, &[rules…])`, evaluated at compile time.
macro_rules! breach {
    ($invariant:ident $(, $rule:literal)* $(,)?) => {
        const {
            $crate::judge::rules::breach::Breach::new(
                $crate::model::invariant::Invariant::$invariant,
                &[$($rule),*],
            )
        }
    };
}
pub(crate) use breach;

/// Whether the coverage table's row for `id` lists `invariant` among its checks.
pub(crate) const fn checked_by(id: &str, invariant: Invariant) -> bool {
    let mut r = 0;
    while r < RULES.len() {
        if same(RULES[r].id, id) {
            return match RULES[r].check {
                Check::Invariants(invariants) => {
                    let mut i = 0;
                    while i < invariants.len() {
                        if invariants[i] as u8 == invariant as u8 {
                            return true;
                        }
                        i += 1;
                    }
                    false
                }
                Check::Harness(_) | Check::NotChecked(_) => false,
            };
        }
        r += 1;
    }
    false
}

const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_breach_names_only_rules_its_invariant_checks() {
        let blind = breach!(NoBlindRetry, "§4-10", "§4-11");
        assert_eq!(blind.rules(), &["§4-10", "§4-11"]);
        assert!(checked_by("§5-1", Invariant::AtMostOnce));
        assert!(!checked_by("§5-1", Invariant::NoBlindRetry), "§5-1's row lists at_most_once only");
        assert!(!checked_by("§5-10", Invariant::AtMostOnce), "no such rule");
        assert!(!checked_by("§2-3", Invariant::AtMostOnce), "enforced by the harness, not an invariant");
        let wrong = std::panic::catch_unwind(|| Breach::new(Invariant::AtMostOnce, &["§4-5"]));
        assert!(wrong.is_err(), "§4-5 is stable_provider_key's, not at_most_once's");
    }
}
