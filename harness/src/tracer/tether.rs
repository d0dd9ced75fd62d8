//! `killpoint-tracer --die-with PID [--exec]`: the tracer as the harness's way to start a child
//! that dies with it, without the harness forking itself.
//!
//! Every process the harness starts must die when the harness dies, even by SIGKILL:
//! `PR_SET_PDEATHSIG`, which only the child can set, between fork and exec. Set from a `pre_exec`
//! closure it makes std fork the harness (copy its page tables, then take a copy-on-write fault
//! for every page either side writes next, with TLB shootdowns across its threads) instead of
//! `posix_spawn`ing it. So the harness spawns this small program, which arms the signal and
//! checks its parent is still there ([`die_with`]), then traces as usual or, with `--exec`,
//! becomes the program ([`exec`]). The harness starts its children so in `run/tether.rs`.

use std::ffi::OsString;
use std::path::Path;

/// Arms SIGKILL for when the parent dies, with no signal blocked (the harness's command line
/// blocks SIGINT and SIGTERM in every thread: a child inheriting that mask would ignore a
/// SIGTERM), and makes sure the parent, `parent`, had not died already.
pub fn die_with(parent: i32) -> Result<(), String> {
    arm_death_signal(parent).map_err(|failed| match failed {
        Unarmed::Mask(e) => format!("cannot unblock the signals: {e}"),
        Unarmed::Signal(e) => format!("cannot arm PR_SET_PDEATHSIG: {e}"),
        Unarmed::Orphaned => format!("the harness (pid {parent}) is gone"),
    })
}

/// Which step of [`arm_death_signal`] failed.
pub enum Unarmed {
    Mask(nix::errno::Errno),
    Signal(nix::errno::Errno),
    /// The parent died first: we were handed to a reaper.
    Orphaned,
}

/// What [`die_with`] does, allocating nothing: also safe between fork and exec, where the
/// harness calls it from a `pre_exec` closure when no tracer can start its children.
pub fn arm_death_signal(parent: i32) -> Result<(), Unarmed> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
    sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None).map_err(Unarmed::Mask)?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(Unarmed::Signal)?;
    // The parent may have died between our start and the prctl.
    if nix::unistd::getppid().as_raw() != parent {
        return Err(Unarmed::Orphaned);
    }
    Ok(())
}

/// Becomes `program` with `args` (looked up on PATH when it names no directory); returns only
/// when that failed, with what [`cannot_start`] says about it.
pub fn exec(program: &OsString, args: &[OsString]) -> String {
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(program).args(args).exec();
    cannot_start(Path::new(program), &error)
}

/// Why `program` could not be started, in words that point at the fix: exec's bare errno is
/// misleading for a script whose `#!` interpreter is missing (ENOENT, as if the script were).
pub fn cannot_start(program: &Path, error: &std::io::Error) -> String {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(program).ok();
    let what = match (error.kind(), &metadata) {
        (std::io::ErrorKind::NotFound, None) => format!("`{}` does not exist", program.display()),
        (std::io::ErrorKind::NotFound, Some(_)) => match shebang_line(program).ok().flatten() {
            Some(first) => {
                format!("its interpreter was not found: the first line of `{}` is `{first}`", program.display())
            }
            None => format!("`{}` exists, but exec found no program to run", program.display()),
        },
        (std::io::ErrorKind::PermissionDenied, Some(m)) if m.is_dir() => {
            format!("`{}` is a directory", program.display())
        }
        (std::io::ErrorKind::PermissionDenied, Some(m)) if m.permissions().mode() & 0o111 == 0 => {
            format!(
                "`{}` is not executable (mode {:o}): chmod +x it",
                program.display(),
                m.permissions().mode() & 0o7777
            )
        }
        _ => return format!("cannot start: {error}"),
    };
    format!("cannot start: {what} ({error})")
}

/// The error exec would give for `program` (its errno, so it reads as exec's would), found
/// without running it, for the cases [`cannot_start`] words (missing, a directory, not
/// executable, a `#!` interpreter missing):
/// a program started through `--exec` fails in the child, where the harness would only see an
/// exit status. `None` when exec may well succeed.
pub fn would_fail(program: &Path) -> Option<std::io::Error> {
    use std::io::Error;
    use std::os::unix::fs::PermissionsExt;
    // A bare name is looked up on PATH by exec: the child says what it found.
    if program.components().count() == 1 && !program.is_absolute() {
        return None;
    }
    let Ok(metadata) = std::fs::metadata(program) else {
        return Some(Error::from_raw_os_error(libc::ENOENT));
    };
    if metadata.is_dir() || metadata.permissions().mode() & 0o111 == 0 {
        return Some(Error::from_raw_os_error(libc::EACCES));
    }
    let first = shebang_line(program).ok().flatten()?;
    let interpreter = first.trim_start_matches("#!").split_whitespace().next()?;
    (!Path::new(interpreter).exists()).then(|| Error::from_raw_os_error(libc::ENOENT))
}

/// The first line of `program` (within its first 512 bytes) when it starts with `#!`, as written:
/// what exec reads to find an interpreter. The runtime's preflight reads it too
/// (`run::preflight`).
pub fn shebang_line(program: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let mut head = [0u8; 512];
    let read = std::fs::File::open(program)?.read(&mut head)?;
    let first = head[..read].split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first).into_owned();
    Ok(first.starts_with("#!").then_some(first))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn what_exec_would_refuse_is_found_before_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(would_fail(&missing).map(|e| e.kind()), Some(std::io::ErrorKind::NotFound));
        assert_eq!(would_fail(dir.path()).map(|e| e.kind()), Some(std::io::ErrorKind::PermissionDenied));
        let script = dir.path().join("script");
        std::fs::write(&script, "#!/no/such/interpreter -x\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = would_fail(&script).expect("not executable");
        assert!(cannot_start(&script, &error).contains("is not executable (mode 644)"));
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = would_fail(&script).expect("its interpreter is missing");
        assert!(cannot_start(&script, &error).contains("its interpreter was not found"), "{error}");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        assert!(would_fail(&script).is_none());
        assert!(would_fail(Path::new("sh")).is_none(), "a bare name is for exec to look up");
    }
}
