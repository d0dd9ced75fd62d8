//! The wait loop: every stop of every traced thread — a call's entry (its seccomp stop), its
//! exit, a group-stop, a signal, the exec — and the program's end.

use super::error::{TracerError, errno};
use super::memory::received_bytes;
use super::point::{PointKind, When};
use super::seccomp::Call;
use super::state::Tracer;

// A ptrace number the libc crate does not export for every target (x86_64 Linux ABI).
const PTRACE_EVENT_STOP: i32 = 128;

impl Tracer {
    /// Waits for every stop of every traced thread until the program ends; returns the status to
    /// exit with (see `run`).
    pub(super) fn trace(&mut self, child: i32, report: i32, shown: &str) -> Result<i32, TracerError> {
        if self.schedule.is_some() {
            return self.trace_scheduled(child, report, shown);
        }
        loop {
            let mut status = 0;
            // SAFETY: waits for any traced thread or process (__WALL: threads too).
            let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
            if tid < 0 {
                let source = errno();
                if source.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(TracerError::System { what: "waitpid", source });
            }
            if let Some(code) = self.on_event(child, tid, status, report, shown)? {
                return Ok(code);
            }
        }
    }

    /// One event of `waitpid`: a stop, or a thread's end; `Some` status to exit with once the
    /// program itself ended.
    pub(super) fn on_event(
        &mut self,
        child: i32,
        tid: i32,
        status: i32,
        report: i32,
        shown: &str,
    ) -> Result<Option<i32>, TracerError> {
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            self.pending.remove(&tid);
            if let Some(scheduler) = &mut self.schedule {
                scheduler.gone(tid);
            }
            if tid != child {
                return Ok(None);
            }
            if !self.exec_seen {
                return Err(self.early_exit(status, report, shown));
            }
            // Other traced processes (forks of the program) die with us: PTRACE_O_EXITKILL.
            return Ok(Some(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            }));
        }
        if libc::WIFSTOPPED(status) {
            if let Some(scheduler) = &mut self.schedule {
                scheduler.threads.seen(tid);
                scheduler.frozen.remove(&tid);
                scheduler.moved();
            }
            self.on_stop(tid, status)?;
        }
        Ok(None)
    }

    /// One stop of a traced thread, by its kind.
    fn on_stop(&mut self, tid: i32, status: i32) -> Result<(), TracerError> {
        let signal = libc::WSTOPSIG(status);
        let event = status >> 16;
        match event {
            libc::PTRACE_EVENT_SECCOMP => {
                self.tally.stops += 1;
                self.on_entry(tid)?;
            }
            PTRACE_EVENT_STOP => {
                if matches!(signal, libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU) {
                    // A group-stop (the harness froze the runtime): stay stopped, but wake on
                    // SIGCONT.
                    unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0, 0) };
                    if let Some(scheduler) = &mut self.schedule {
                        scheduler.frozen.insert(tid);
                    }
                } else {
                    // A new thread's first stop, or an interrupt.
                    self.resume(tid, 0);
                }
            }
            0 if signal == (libc::SIGTRAP | 0x80) => self.on_exit(tid)?,
            0 => self.resume(tid, signal),
            libc::PTRACE_EVENT_EXEC => {
                self.exec_seen = true;
                self.resume(tid, 0);
            }
            libc::PTRACE_EVENT_CLONE | libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK => {
                if let Some(scheduler) = &mut self.schedule {
                    let mut born: libc::c_ulong = 0;
                    // SAFETY: GETEVENTMSG writes the new thread's id into a local.
                    if unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, tid, 0, &mut born as *mut _) } == 0 {
                        scheduler.threads.started(tid, born as i32);
                    }
                }
                self.resume(tid, 0);
            }
            _ => self.resume(tid, 0),
        }
        Ok(())
    }

    /// The child exited before exec: seccomp refused (it told us why) or exec failed.
    fn early_exit(&self, status: i32, report: i32, shown: &str) -> TracerError {
        let mut code = 0i32;
        // SAFETY: reads at most 4 bytes into a local.
        let n = unsafe { libc::read(report, (&mut code as *mut i32).cast(), 4) };
        if n == 4 {
            return TracerError::NotPermitted {
                what: "seccomp (PR_SET_SECCOMP)",
                source: std::io::Error::from_raw_os_error(code),
            };
        }
        let source = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 127 {
            std::io::Error::other("exec failed")
        } else {
            std::io::Error::other("it ended before it started")
        };
        TracerError::Program { program: shown.to_owned(), source }
    }

    /// Restarts a stopped thread: to its call's exit if a point waits there, else freely.
    pub(super) fn resume(&self, tid: i32, signal: i32) {
        let watched = self.schedule.as_ref().is_some_and(|s| s.watched.contains_key(&tid));
        let request = if self.pending.contains_key(&tid) || watched { libc::PTRACE_SYSCALL } else { libc::PTRACE_CONT };
        // An error means the thread is gone (killed meanwhile): nothing to resume.
        unsafe { libc::ptrace(request, tid, 0, signal as libc::c_long) };
    }

    fn registers(tid: i32) -> Option<libc::user_regs_struct> {
        // SAFETY: GETREGS fills the struct we own.
        let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ptrace(libc::PTRACE_GETREGS, tid, 0, &mut regs as *mut _) } == 0;
        ok.then_some(regs)
    }

    fn on_entry(&mut self, tid: i32) -> Result<(), TracerError> {
        let Some(regs) = Self::registers(tid) else { return Ok(()) };
        let call = Call::from_number(regs.orig_rax as i64);
        let pending = call.and_then(|call| self.classify(tid, call, &regs));
        if let Some(scheduler) = &mut self.schedule {
            match pending {
                // Held, not announced: the schedule says when it goes (`schedule::run`).
                Some(pending) if pending.kind != PointKind::Answer => {
                    scheduler.hold(tid, pending);
                    return Ok(());
                }
                None if call.is_some_and(|c| c.is_receive() || c.is_send()) => {
                    self.unpointed(tid, call.expect("matched"), regs.rdi as i64);
                }
                _ => {}
            }
        }
        if let Some(pending) = pending {
            if pending.kind != PointKind::Answer {
                self.announce(tid, When::Before, &pending, None, None)?;
            }
            self.pending.insert(tid, pending);
        }
        self.resume(tid, 0);
        Ok(())
    }

    fn on_exit(&mut self, tid: i32) -> Result<(), TracerError> {
        if self.schedule.as_ref().is_some_and(|s| s.watched.contains_key(&tid)) {
            let ret = Self::registers(tid).map(|regs| regs.rax as i64);
            self.unpointed_exit(tid, ret);
        }
        if let Some(pending) = self.pending.remove(&tid) {
            let ret = Self::registers(tid).map(|regs| regs.rax as i64);
            if pending.kind != PointKind::Answer || ret.is_some_and(|r| r > 0) {
                let mut pending = pending;
                let mut answer = None;
                if let (Some(receive), Some(n)) = (pending.receive, ret.filter(|&r| r > 0)) {
                    let bytes = received_bytes(tid, receive.buffer, n as usize);
                    let exchange = self.exchanges.entry(receive.inode).or_default();
                    if let Some((request, complete)) = bytes.and_then(|b| exchange.received(&b)) {
                        pending.request = request;
                        answer = Some(complete);
                    }
                }
                self.announce(tid, When::After, &pending, ret, answer)?;
            }
        }
        if let Some(scheduler) = &mut self.schedule {
            scheduler.finished(tid);
        }
        self.resume(tid, 0);
        Ok(())
    }
}
