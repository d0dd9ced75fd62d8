//! Each subcommand's logic, for `main.rs` (which holds the clap types and dispatch only).
//!
//! The top layer: may import every part; nothing in the library imports it.
