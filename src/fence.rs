//! Fencing: what an incarnation does when it learns that a newer one has started on its data dir
//! (CONTRACT.md §9, "Overlapping incarnations").
//!
//! The harness may freeze an incarnation (SIGSTOP), start the next one on the same data dir, and
//! resume the frozen one later. The newer incarnation raised the store's fence when it opened
//! the store, and the fake world refuses the old incarnation's number. Either way of finding out
//! leads here.

/// Exit status of an incarnation that found itself fenced: distinct from a crash (1), so a log
/// reader can tell the two apart.
pub const EXIT_FENCED: i32 = 3;

/// Ends the process at once, without returning: not another request, not another commit. A
/// `return Err(…)` would unwind through callers that may still write ("record the failure"), and
/// the API server and the worker would each have to notice; exiting here cannot be half done.
/// An open SQLite transaction is rolled back by the exit itself (it was never committed).
pub fn exit(why: &str) -> ! {
    if HANG.load(std::sync::atomic::Ordering::Relaxed) {
        // BROKEN: the work at hand stops, the process does not: this thread waits for ever.
        eprintln!("killpoint-runtime: fenced: {why}; stopping this work, staying up");
        loop {
            std::thread::park();
        }
    }
    eprintln!("killpoint-runtime: fenced: {why}; a newer incarnation owns the data dir, exiting");
    std::process::exit(EXIT_FENCED)
}

/// Set only by the deliberately broken `fenced-hangs` variant.
pub static HANG: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set only by the deliberately broken `ignores-fence` variant.
pub static RESEND: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
