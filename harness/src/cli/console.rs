//! What every subcommand prints goes through here (`outln!`, `out!`, `errln!`), never through
//! `println!` or `eprintln!`: those panic when the reader has gone (`killpoint certify | head -1`
//! closes stdout after one line), and the panic stopped the run before the reports named by flags
//! were written and made the exit status 101 instead of the verdict's. Here a stream that cannot
//! be written is given up on, and the work goes on.

use std::fmt::Arguments;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `println!` to stdout that neither panics nor stops the work when stdout is closed.
macro_rules! outln {
    () => { $crate::cli::console::out(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::console::out(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` to stdout, the same way.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::console::out(format_args!($($arg)*)) };
}

/// `eprintln!` to stderr, the same way.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::console::err(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Set once a write to stdout failed for a reason other than a reader that left.
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes to stdout.
pub fn out(args: Arguments<'_>) {
    stdout_result(std::io::stdout().lock().write_fmt(args));
}

/// Writes bytes to stdout (what a library renders into a buffer, as the shell completions).
pub fn out_bytes(bytes: &[u8]) {
    stdout_result(std::io::stdout().lock().write_all(bytes));
}

/// A closed pipe is the reader's choice and is not said; any other failure (a full disk behind
/// `> file`) is said once on stderr, so the missing tables are explained.
fn stdout_result(result: std::io::Result<()>) {
    if let Err(e) = result
        && e.kind() != std::io::ErrorKind::BrokenPipe
        && !STDOUT_FAILED.swap(true, Ordering::Relaxed)
    {
        err(format_args!("killpoint: cannot write to stdout ({e}); the run goes on without it\n"));
    }
}

/// Writes to stderr. If stderr cannot be written there is nowhere left to say so.
pub fn err(args: Arguments<'_>) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

#[cfg(test)]
mod tests {
    /// The promise holds only if nothing in the front ends prints around this module.
    #[test]
    fn the_front_ends_print_only_through_this_module() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files: Vec<_> = std::fs::read_dir(src.join("cli")).unwrap().flatten().map(|e| e.path()).collect();
        files.push(src.join("main.rs"));
        let mut found = Vec::new();
        for file in files.iter().filter(|f| !f.ends_with("console.rs")) {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//")) {
                if ["print!(", "println!(", "eprint!(", "eprintln!(", "io::stdout()", "io::stderr()"]
                    .iter()
                    .any(|m| line.contains(m) && !line.contains("is_terminal"))
                {
                    found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "print through cli::console (outln!, out!, errln!) instead:\n{}", found.join("\n"));
    }
}
