//! The words every part shares: where kills land ([`boundary`]), what a kill takes down
//! ([`crash`]), what is proven ([`invariant`]), and the reference runtime's planted mistakes
//! ([`variants`]).
//!
//! The bottom layer: imports nothing else of the crate.

pub mod boundary;
pub mod contract;
pub mod crash;
pub mod invariant;
pub mod variants;

/// Whether `name` is a service's name (a services file's `[[service]]`, a scenario's
/// `[[service_fault]]`): `[a-z][a-z0-9_]*`, at most 32 characters, so that it is a file name
/// (`logs/service-<name>.log`) and, upper-cased, part of an environment variable's name.
pub fn service_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_lowercase());
    let rest = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match first && rest && name.len() <= 32 {
        true => Ok(()),
        false => Err(format!(
            "expected a service name of lower-case letters, digits and `_`, starting with a letter, at most 32 characters; found `{name}`"
        )),
    }
}
