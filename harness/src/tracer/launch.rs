//! Starting the program under the tracer: the child's side (dies with the tracer, waits to be
//! seized, installs the filter, execs — in that order, see the folder's comment) and the tracer's
//! (seizes it, forwards SIGTERM/SIGINT, lets it go, traces it to its end).

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::channel::Channel;
use super::config::Config;
use super::error::{NOT_PERMITTED_EXIT, TracerError, errno};
use super::seccomp::filter;
use super::state::Tracer;

/// The runtime's pid, for the SIGTERM/SIGINT forwarder (a signal handler can only read statics).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int) {
    let pid = CHILD.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(pid, signal) };
    }
}

/// `execvp`'s search, done before fork so the child only has to exec.
fn resolve(program: &OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        return path.is_file().then(|| path.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(path)).find(|p| p.is_file())
}

/// Runs `program args…` under the tracer and returns the exit status to exit with: the program's,
/// or 128 + the signal that killed it.
pub fn run(program: &OsStr, args: &[OsString], config: Config) -> Result<i32, TracerError> {
    let shown = program.to_string_lossy().into_owned();
    let schedule = config.schedule.clone().transpose().map_err(TracerError::Setting)?;
    let (exe, argv) = command(program, args, &shown)?;
    let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    argv_ptrs.push(std::ptr::null());
    let filter = filter();
    let fprog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr() as *mut _ };
    let channel = open_channel(&config)?;
    let log = open_log(&config)?;
    // `go`: the child waits on it until it is seized. `report`: the child's errno if seccomp is
    // refused (written before the filter is in place, so the write itself is not traced).
    let (go, report) = pipes()?;
    let parent = unsafe { libc::getpid() };
    // SAFETY: the tracer is single-threaded, and the child only makes raw system calls on data
    // prepared above until it execs or exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(TracerError::System { what: "fork", source: errno() });
    }
    if pid == 0 {
        start_child(parent, go, report, &fprog, &exe, &argv_ptrs);
    }
    unsafe {
        libc::close(go[0]);
        libc::close(report[1]);
    }
    seize(pid)?;
    forward_signals(pid);
    unsafe {
        libc::write(go[1], [1u8].as_ptr().cast(), 1);
        libc::close(go[1]);
    }
    let mut tracer = Tracer::new(config, channel, log);
    tracer.schedule = schedule.map(super::schedule::Scheduler::new);
    let status = tracer.trace(pid, report[0], &shown)?;
    if tracer.channel.is_none() {
        let unsettled = tracer.schedule.as_ref().map(|s| s.unsettled);
        eprintln!("{}", tracer.tally.summary());
        if let Some(unsettled) = unsettled {
            eprintln!("killpoint-tracer: controlled schedule: {} decisions, {unsettled} unsettled", tracer.n);
        }
    }
    Ok(status)
}

/// The program's path (found as `execvp` would) and its argv, as the C strings `execv` takes.
fn command(program: &OsStr, args: &[OsString], shown: &str) -> Result<(CString, Vec<CString>), TracerError> {
    let not_found =
        || TracerError::Program { program: shown.to_owned(), source: std::io::Error::from_raw_os_error(libc::ENOENT) };
    let path = resolve(program).ok_or_else(not_found)?;
    let nul = |_| TracerError::Program {
        program: shown.to_owned(),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    };
    let exe = CString::new(path.as_os_str().as_bytes()).map_err(nul)?;
    let argv: Vec<CString> = std::iter::once(program)
        .chain(args.iter().map(OsString::as_os_str))
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(nul)?;
    Ok((exe, argv))
}

/// The harness's end of the trace socket, if there is one.
fn open_channel(config: &Config) -> Result<Option<Channel>, TracerError> {
    Ok(match &config.socket {
        Some(path) => Some(Channel::connect(path)?),
        None => None,
    })
}

fn open_log(config: &Config) -> Result<Option<std::fs::File>, TracerError> {
    Ok(match &config.log {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|source| TracerError::Log { path: path.display().to_string(), source })?,
        ),
        None => None,
    })
}

/// Two close-on-exec pipes: `go` and `report` (see `run`).
fn pipes() -> Result<([i32; 2], [i32; 2]), TracerError> {
    let mut go = [0; 2];
    let mut report = [0; 2];
    // SAFETY: plain pipe creation into local arrays.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0
        || unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) } != 0
    {
        return Err(TracerError::System { what: "pipe2", source: errno() });
    }
    Ok((go, report))
}

/// The forked child, up to its exec: only raw system calls on data prepared before the fork.
fn start_child(
    parent: i32,
    go: [i32; 2],
    report: [i32; 2],
    fprog: &libc::sock_fprog,
    exe: &CString,
    argv: &[*const libc::c_char],
) -> ! {
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The tracer may have died before PDEATHSIG was armed.
        if libc::getppid() != parent {
            libc::_exit(1);
        }
        libc::close(go[1]);
        libc::close(report[0]);
        let mut byte = 0u8;
        if libc::read(go[0], (&mut byte as *mut u8).cast(), 1) != 1 {
            libc::_exit(1);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, fprog as *const libc::sock_fprog) != 0
        {
            let code = *libc::__errno_location();
            libc::write(report[1], (&code as *const i32).cast(), 4);
            libc::_exit(NOT_PERMITTED_EXIT);
        }
        libc::execv(exe.as_ptr(), argv.as_ptr());
        libc::_exit(127);
    }
}

/// Attaches to the child, following every thread and process it starts; on refusal the child
/// is killed and reaped.
fn seize(pid: i32) -> Result<(), TracerError> {
    let options = libc::PTRACE_O_TRACESECCOMP
        | libc::PTRACE_O_TRACECLONE
        | libc::PTRACE_O_TRACEFORK
        | libc::PTRACE_O_TRACEVFORK
        | libc::PTRACE_O_TRACEEXEC
        | libc::PTRACE_O_TRACESYSGOOD
        | libc::PTRACE_O_EXITKILL;
    // SAFETY: ptrace on our own child.
    if unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0, options as libc::c_long) } != 0 {
        let source = errno();
        unsafe { libc::kill(pid, libc::SIGKILL) };
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        return Err(TracerError::NotPermitted { what: "ptrace (PTRACE_SEIZE)", source });
    }
    Ok(())
}

fn forward_signals(pid: i32) {
    CHILD.store(pid, Ordering::Relaxed);
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: installs a handler that only calls kill.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}
