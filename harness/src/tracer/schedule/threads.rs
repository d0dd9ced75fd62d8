//! The runtime's threads as the schedule sees them: a label each that does not depend on thread
//! ids (the n-th thread a thread started: `main.2.1`), and what each is doing now, read from
//! `/proc` (its state, and for a sleeping one the call it sleeps in).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// Every traced thread alive, with its label.
#[derive(Debug, Default)]
pub(in crate::tracer) struct Threads {
    labels: BTreeMap<i32, String>,
    /// How many threads (or processes) each one started so far.
    started: HashMap<i32, u32>,
    /// Each thread's `/proc/<tid>/stat`, open: a look is one `pread` of it, not an open, a
    /// `statx`, six small reads and a close (a scheduled run of the wave looked about 5,000
    /// times, and those calls were most of the tracer's own).
    stats: RefCell<HashMap<i32, std::fs::File>>,
}

impl Threads {
    pub(in crate::tracer) fn root(&mut self, pid: i32) {
        self.labels.insert(pid, "main".to_owned());
    }

    /// `parent` started `child` (a PTRACE_EVENT_CLONE, FORK or VFORK stop of the parent). The
    /// child's own first stop may come first: it is live already, and labelled here.
    pub(in crate::tracer) fn started(&mut self, parent: i32, child: i32) {
        let n = {
            let n = self.started.entry(parent).or_default();
            *n += 1;
            *n
        };
        let label = format!("{}.{n}", self.label(parent));
        self.labels.insert(child, label);
    }

    /// A stop of a thread not seen yet (its parent's event still to come): live, label unknown.
    pub(in crate::tracer) fn seen(&mut self, tid: i32) {
        self.labels.entry(tid).or_insert_with(|| format!("tid{tid}"));
    }

    pub(in crate::tracer) fn gone(&mut self, tid: i32) {
        self.labels.remove(&tid);
        self.stats.get_mut().remove(&tid);
    }

    pub(in crate::tracer) fn label(&self, tid: i32) -> String {
        self.labels.get(&tid).cloned().unwrap_or_else(|| format!("tid{tid}"))
    }

    pub(in crate::tracer) fn live(&self) -> impl Iterator<Item = i32> + '_ {
        self.labels.keys().copied()
    }
}

/// What a thread is doing, from `/proc/<tid>/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Activity {
    /// On a CPU or waiting for one (`R`), or in uninterruptible sleep (`D`: a disk write it will
    /// finish by itself): it will reach a traced call or sleep soon.
    Running,
    /// Stopped: by the tracer (`t`: held, or at a stop not yet taken) or its group (`T`).
    Stopped,
    /// Asleep (`S`, `I`) in the kernel: a futex, a poll, a timer, a receive.
    Asleep,
    /// Gone, or a zombie.
    Gone,
}

impl Threads {
    /// What `tid` is doing now, from its `/proc/<tid>/stat` (kept open, read again from its
    /// start: the kernel writes it anew for each read at offset 0).
    pub(super) fn activity(&self, tid: i32) -> Activity {
        use std::os::unix::fs::FileExt;
        let mut stats = self.stats.borrow_mut();
        // A stat line is a few hundred bytes; the state comes early in it.
        let mut line = [0u8; 1024];
        if let Some(file) = stats.get(&tid) {
            match file.read_at(&mut line, 0) {
                Ok(n) => return activity_in(&line[..n]),
                // Its task ended (a dead task's stat fails to read); a new thread may have the
                // same id by now: opened again below.
                Err(_) => stats.remove(&tid),
            };
        }
        let Ok(file) = std::fs::File::open(format!("/proc/{tid}/stat")) else { return Activity::Gone };
        let Ok(n) = file.read_at(&mut line, 0) else { return Activity::Gone };
        stats.insert(tid, file);
        activity_in(&line[..n])
    }
}

/// The activity a `/proc/<tid>/stat` line says.
fn activity_in(stat: &[u8]) -> Activity {
    // The state is the first field after the command's closing parenthesis.
    let close = stat.iter().rposition(|&b| b == b')');
    let state = close.and_then(|i| stat[i + 1..].iter().find(|b| !b.is_ascii_whitespace())).map(|&b| b as char);
    match state {
        Some('R' | 'D' | 'W') => Activity::Running,
        Some('t' | 'T') => Activity::Stopped,
        Some('S' | 'I') => Activity::Asleep,
        _ => Activity::Gone,
    }
}

/// The socket inode behind `fd` of `tid`, if it is a socket.
pub(super) fn socket_inode(tid: i32, fd: i64) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{tid}/fd/{fd}")).ok()?;
    let text = link.to_str()?;
    text.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// Asks `ask` of a copy of file descriptor `fd` of thread `tid` (a socket), copied into the tracer
/// (`pidfd_getfd`, which a tracer may do) and closed after. `None` when it cannot be copied (the
/// thread is gone, an old kernel) or `ask` cannot tell.
fn ask_copy<T>(tid: i32, fd: i32, ask: impl FnOnce(i32) -> Option<T>) -> Option<T> {
    // SAFETY: raw system calls on ids we own; every fd opened here is closed here.
    let copy = unsafe {
        // PIDFD_THREAD (O_EXCL, Linux 6.9) for a thread that does not lead its group, as a
        // runtime's workers do; without the flag (older kernels) only a leader can be opened.
        let mut pidfd = libc::syscall(libc::SYS_pidfd_open, tid, libc::O_EXCL) as i32;
        if pidfd < 0 {
            pidfd = libc::syscall(libc::SYS_pidfd_open, tid, 0) as i32;
        }
        if pidfd < 0 {
            return None;
        }
        let copy = libc::syscall(libc::SYS_pidfd_getfd, pidfd, fd, 0) as i32;
        libc::close(pidfd);
        copy
    };
    if copy < 0 {
        return None;
    }
    let answer = ask(copy);
    // SAFETY: the copy is ours, and closed once.
    unsafe { libc::close(copy) };
    answer
}

/// Bytes received and not yet read on file descriptor `fd` of thread `tid` (a socket), asked of a
/// copy (`FIONREAD`).
pub(super) fn unread(tid: i32, fd: i32) -> Option<u64> {
    ask_copy(tid, fd, |copy| {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, ours.
        let ok = unsafe { libc::ioctl(copy, libc::FIONREAD, &mut n) } == 0;
        ok.then_some(n as u64)
    })
}

/// Whether socket `fd` of thread `tid` has an answer for a reader: bytes, or the peer's close (a
/// world fault that drops the connection answers with an end of file), asked of a copy (`poll`).
pub(super) fn readable(tid: i32, fd: i32) -> Option<bool> {
    ask_copy(tid, fd, |copy| {
        let mut poll = libc::pollfd { fd: copy, events: libc::POLLIN | libc::POLLRDHUP, revents: 0 };
        // SAFETY: one pollfd, ours; no wait.
        let n = unsafe { libc::poll(&mut poll, 1, 0) };
        (n >= 0).then_some(n > 0)
    })
}

/// Whether socket `inode` (of process `pid`) is a Unix-domain one: the probe's, or another
/// process of the harness's side. Its peer is the harness: an answer is on its way.
pub(super) fn is_unix(pid: i32, inode: u64) -> bool {
    let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/net/unix")) else { return false };
    // Columns: Num RefCount Protocol Flags Type St Inode Path.
    table.lines().skip(1).any(|line| line.split_whitespace().nth(6).and_then(|w| w.parse::<u64>().ok()) == Some(inode))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The socket a thread asleep in a receive (per `/proc/<tid>/syscall`) reads.
    fn socket_of_read(tid: i32) -> Option<u64> {
        let text = std::fs::read_to_string(format!("/proc/{tid}/syscall")).ok()?;
        let mut words = text.split_whitespace();
        let call = words.next()?.parse::<i64>().ok()?;
        [libc::SYS_read, libc::SYS_recvfrom].contains(&call).then_some(())?;
        let fd = i64::from_str_radix(words.next()?.trim_start_matches("0x"), 16).ok()?;
        socket_inode(tid, fd)
    }

    #[test]
    fn labels_follow_who_started_whom_not_thread_ids() {
        let mut threads = Threads::default();
        threads.root(900);
        threads.started(900, 1234);
        threads.started(900, 1200);
        threads.started(1234, 5000);
        assert_eq!(
            [threads.label(1234), threads.label(1200), threads.label(5000)],
            ["main.1", "main.2", "main.1.1"].map(String::from)
        );
        threads.gone(1200);
        assert_eq!(threads.live().collect::<Vec<_>>(), vec![900, 1234, 5000]);
    }

    /// A runtime's workers do not lead their thread group: a socket one of them holds is still
    /// asked (this test runs on a thread of the test binary, which leads nothing either).
    #[test]
    fn bytes_waiting_on_a_socket_are_counted_through_a_thread_that_leads_no_group() {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let me = unsafe { libc::gettid() };
        assert_ne!(me, std::process::id() as i32, "expected a test thread, not the main one");
        let (reader, mut writer) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        writer.write_all(b"abc").expect("three bytes sent");
        assert_eq!(unread(me, reader.as_raw_fd()), Some(3));
        assert_eq!(readable(me, reader.as_raw_fd()), Some(true));
    }

    #[test]
    fn a_thread_asleep_in_a_read_is_told_from_one_running_and_its_socket_is_unix() {
        // This test's own thread is running while it reads its stat.
        let me = unsafe { libc::gettid() };
        // One `Threads` throughout: its open stat files are read again, and must say what is now.
        let threads = Threads::default();
        assert_eq!(threads.activity(me), Activity::Running);
        let (mut reader, _writer) = std::os::unix::net::UnixStream::pair().expect("a socket pair");
        let sleeper = std::thread::spawn(move || {
            use std::io::Read;
            let tid = unsafe { libc::gettid() };
            let mut byte = [0u8; 1];
            (tid, reader.read(&mut byte).ok())
        });
        // Its tid is not known until it ends: find it among this process's threads, asleep in read.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let found = loop {
            let tasks = std::fs::read_dir("/proc/self/task").expect("our threads");
            let asleep = tasks
                .filter_map(|t| t.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .find(|&tid| tid != me && threads.activity(tid) == Activity::Asleep && socket_of_read(tid).is_some());
            if let Some(tid) = asleep {
                break tid;
            }
            assert!(std::time::Instant::now() < deadline, "waited 5 s for the thread to sleep in read");
            std::thread::yield_now();
        };
        let inode = socket_of_read(found).expect("it reads a socket");
        assert!(is_unix(std::process::id() as i32, inode), "a socket pair is Unix-domain");
        drop(_writer);
        assert_eq!(sleeper.join().expect("the reader ends").0, found);
        assert_eq!(threads.activity(found), Activity::Gone, "the same open stat file, once its thread ended");
    }
}
