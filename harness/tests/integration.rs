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

/// Before libtest starts: twice as many tests at once as cores (`RUST_TEST_THREADS`, unless set),
/// and the interpreter `python3` resolves to first on PATH, so that the Python runtimes the tests
/// start skip a version manager's shim (`killpoint::trials::interpreter`).
#[ctor::ctor(unsafe)]
fn before_libtest() {
    // SAFETY: before main, on the one thread there is.
    unsafe { killpoint::trials::arguments::default_test_threads_before_main() }
    killpoint::trials::interpreter::python3_first_on_path();
}
