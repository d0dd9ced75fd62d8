//! The reference runtime's deliberately broken variants, asked of the runtime itself
//! (`killpoint-runtime --list-broken`): the list lives in one place, `src/broken.rs`, and the
//! harness cannot drift from it.
//!
//! Every `--list-broken` call goes through [`of`]: the runtime asked may be anyone's, and one
//! that ignores the flag and serves would otherwise hold the harness for as long as it lives.

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

/// How long `--list-broken` may take. The reference runtime prints a fixed table and exits
/// (no database, no network): milliseconds. Five seconds is room for a cold start of a debug
/// build on a loaded machine, and short enough that a runtime which ignores the flag and starts
/// serving costs the user one pause, not the runtime's whole life.
pub const LIST_DEADLINE: Duration = Duration::from_secs(5);

/// Most of the list read: the reference runtime's is a few kilobytes; a runtime that writes more
/// is not listing variants (it is left to block, and the deadline ends it).
const MAX_LIST: u64 = 1024 * 1024;

/// One broken variant: the name given to `--broken`, and what it gets wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub description: String,
}

/// Why a runtime has no variant list: it is then treated as a runtime without variants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoVariants {
    /// What was asked and what came back (or did not), in words for the user.
    pub why: String,
    /// It did not answer within [`LIST_DEADLINE`] and was killed: not an answer, so worth saying
    /// even where a runtime that lists none is not.
    pub timed_out: bool,
}

impl std::fmt::Display for NoVariants {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl From<NoVariants> for String {
    fn from(e: NoVariants) -> String {
        e.why
    }
}

/// The variants `program` has, from `program --list-broken`. `Err` for a runtime that has none
/// (any runtime but the reference one) or that did not answer in time, saying which.
pub fn of(program: &Path) -> Result<Vec<Variant>, NoVariants> {
    of_within(program, LIST_DEADLINE)
}

/// [`of`], the list given `deadline` rather than [`LIST_DEADLINE`] (a test of a silent runtime
/// need not wait five seconds).
pub(crate) fn of_within(program: &Path, deadline: Duration) -> Result<Vec<Variant>, NoVariants> {
    let (status, stdout) = list_broken(program, deadline)?;
    let variants = parse_list(&String::from_utf8_lossy(&stdout));
    if !status.success() || variants.is_empty() {
        return Err(NoVariants {
            why: format!(
                "`{} --list-broken` lists no broken variants ({status}): only the reference runtime (killpoint-runtime) has them",
                program.display()
            ),
            timed_out: false,
        });
    }
    Ok(variants)
}

/// The variants of the reference runtime this killpoint was built with: `killpoint-runtime
/// --list-broken` as `variants.tsv` keeps it (harness/tests/first_day.rs fails when the two differ).
/// For `killpoint list variants` where that runtime is not installed: `cargo install --path
/// harness` installs killpoint alone, and the list is for people writing `[[catches]]`.
pub fn built_in() -> Vec<Variant> {
    parse_list(include_str!("variants.tsv"))
}

/// `name<TAB>description` lines, as `--list-broken` prints them.
fn parse_list(text: &str) -> Vec<Variant> {
    text.lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(name, description)| Variant { name: name.to_owned(), description: description.to_owned() })
        .collect()
}

/// Runs `program --list-broken` (stdin closed, stderr discarded) in a process group of its own,
/// and returns how it exited and its stdout. Past `deadline` the whole group is SIGKILLed (what
/// it forked may hold stdout open) and the program reaped before the error says so.
fn list_broken(program: &Path, deadline: Duration) -> Result<(ExitStatus, Vec<u8>), NoVariants> {
    let shown = program.display();
    let failed = |why: String| NoVariants { why, timed_out: false };
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot run `{shown} --list-broken`: no async runtime: {e}")))?;
    let mut command = tokio::process::Command::new(program);
    command.arg("--list-broken").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    command.process_group(0).kill_on_drop(true);
    // SAFETY: the closure only calls async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        command.pre_exec(|| {
            // Die with the harness, as an incarnation does (incarnation.rs).
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            if nix::unistd::getppid() == nix::unistd::Pid::from_raw(1) {
                nix::libc::_exit(1);
            }
            Ok(())
        });
    }
    tokio.block_on(async {
        let mut child = command.spawn().map_err(|e| failed(format!("cannot run `{shown} --list-broken`: {e}")))?;
        let group = child.id().map(|pid| nix::unistd::Pid::from_raw(pid as i32));
        let mut stdout = Vec::new();
        let answered = tokio::time::timeout(deadline, async {
            use tokio::io::AsyncReadExt;
            let mut pipe = child.stdout.take().expect("stdout is piped").take(MAX_LIST);
            let _ = pipe.read_to_end(&mut stdout).await; // an unreadable pipe: judged by the list
            child.wait().await
        })
        .await;
        match answered {
            Ok(Ok(status)) => return Ok((status, stdout)),
            Ok(Err(e)) => return Err(failed(format!("cannot wait for `{shown} --list-broken`: {e}"))),
            Err(_) => {}
        }
        // Not reaped yet (the wait did not return), so the group's id is still its own.
        if let Some(group) = group {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
        // SIGKILL cannot be caught: this wait is short, and leaves no zombie behind.
        let reaped = child.wait().await.map_or_else(|e| format!("not reaped: {e}"), |s| s.to_string());
        Err(NoVariants {
            why: format!(
                "`{shown} --list-broken` did not finish within {} s (waited for its variant list on stdout and its \
                 exit); its process group was killed ({reaped}), and it is taken for a runtime with no broken variants",
                deadline.as_secs()
            ),
            timed_out: true,
        })
    })
}
