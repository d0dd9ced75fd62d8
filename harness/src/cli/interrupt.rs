//! What the command line does on Ctrl-C or SIGTERM (installed first thing by `main.rs`).

/// Ctrl-C (or SIGTERM) mid-run: remove the scratch directories, say where the failing runs'
/// artifacts and the unfinished runs' data dirs and logs are, then exit.
/// The runtime dies with this process (PDEATHSIG), and the watchdog sweeps what it started.
/// The signals are blocked before any other thread exists, so only this thread receives them.
pub fn on_interrupt() {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), None).is_err() {
        return; // default handling: the process dies, the runtime with it
    }
    std::thread::spawn(move || {
        let signal = signals.wait().unwrap_or(Signal::SIGINT);
        // Sockets and the copies of built crash states are no evidence: gone before the exit.
        crate::run::scratch::remove_all();
        let (kept, live) = crate::run::artifacts::frozen();
        for path in kept {
            crate::cli::console::err(format_args!(
                "\nkillpoint: interrupted ({signal}); a failing run's artifacts are kept at {}\n",
                path.display()
            ));
        }
        for path in live {
            crate::cli::console::err(format_args!(
                "\nkillpoint: interrupted ({signal}); the unfinished run's data dir and logs are kept at {}\n",
                path.display()
            ));
        }
        std::process::exit(130);
    });
}
