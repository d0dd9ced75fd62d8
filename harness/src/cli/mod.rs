//! Each subcommand's logic, for `main.rs` (which holds the clap types and dispatch only): one file
//! per subcommand, each taking plain values or a plain options struct that `main.rs` fills from
//! its clap arguments.
//!
//! The top layer: may import every part; nothing in the library imports it. It must not use
//! clap's types either: those stay in `main.rs`.

pub mod bench;
pub mod certify;
pub mod check;
pub mod explore;
pub mod list;
mod options;
pub mod random;
pub mod run;
mod setup;
mod stats;
mod usage;

pub use options::{Output, Runtime, Selection};
pub use usage::Usage;
