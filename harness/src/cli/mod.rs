//! Each subcommand's logic, for `main.rs` (which holds the clap types and dispatch only): one file
//! per subcommand, each taking plain values or a plain options struct that `main.rs` fills from
//! its clap arguments.
//!
//! The top layer: may import every part; nothing in the library imports it. It must not use
//! clap's types either: those stay in `main.rs`.

// First: its macros are in scope for the modules declared after it.
#[macro_use]
pub mod console;
pub mod bench;
pub mod campaign;
pub mod certify;
pub mod check;
pub mod explore;
pub mod interrupt;
pub mod list;
mod options;
mod progress;
pub mod random;
pub mod run;
mod schedules;
mod setup;
mod stats;
mod usage;

pub use options::{Output, Runtime, Selection, shard};
pub use usage::Usage;
