//! The fake world's tests as its clients meet it, over raw HTTP on loopback: one module per file,
//! built as one binary (three links fewer in a cold build; each file alone:
//! `cargo test -p killpoint-fake-tool --test integration wire::`).

mod model;
mod snapshot;
mod wire;
