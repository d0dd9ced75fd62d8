//! The harness's tests of its CLI and its tracer as a user meets them, one module per file of
//! `tests/`, built as one binary: most of their time is waiting on the `killpoint` processes they
//! start, so one test's wait is another's turn (see the workspace's `tests/integration.rs`).
//!
//! One file's tests: `cargo test -p killpoint --test integration replay::`.

mod campaign;
/// Running a child under a deadline, for the files that start `killpoint` as a user would.
mod child;
mod cli;
mod first_day;
mod fuzz;
mod interrupted;
mod otlp;
mod replay;
mod schedule;
mod service_signals;
mod tracer;

/// `killpoint::trials::before_libtest`: the tests' threads and interpreter, set before libtest reads them.
#[ctor::ctor(unsafe)]
fn before_libtest() {
    // SAFETY: before main, on the one thread there is.
    unsafe { killpoint::trials::before_libtest() }
}
