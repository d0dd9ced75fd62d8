//! The traced threads' stops, taken as they come or waited for with a deadline: `waitpid` has no
//! deadline, so SIGCHLD (blocked, so it is only queued) is read from a signalfd with `poll`.

use crate::tracer::error::{TracerError, errno};
use std::time::Duration;

pub(super) struct Events {
    signals: i32,
}

impl Events {
    /// Blocks SIGCHLD in the tracer (single-threaded) and opens its signalfd.
    pub(super) fn new() -> Result<Events, TracerError> {
        // SAFETY: plain signal-set calls on a local set.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(TracerError::System { what: "sigprocmask", source: errno() });
            }
            let signals = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if signals < 0 {
                return Err(TracerError::System { what: "signalfd", source: errno() });
            }
            Ok(Events { signals })
        }
    }

    /// A stop (or end) of a traced thread that is there now, without waiting.
    pub(super) fn take(&self) -> Result<Option<(i32, i32)>, TracerError> {
        loop {
            let mut status = 0;
            // SAFETY: waits for any traced thread, without blocking (__WALL: threads too).
            let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::WNOHANG) };
            if tid > 0 {
                return Ok(Some((tid, status)));
            }
            if tid == 0 {
                return Ok(None);
            }
            let source = errno();
            match source.raw_os_error() {
                Some(libc::EINTR) => continue,
                // No traced thread left: the program's end was taken already.
                Some(libc::ECHILD) => return Ok(None),
                _ => return Err(TracerError::System { what: "waitpid", source }),
            }
        }
    }

    /// Waits until a SIGCHLD is queued (a stop may be there), `also` is readable (the harness
    /// said something) or `within` passed; the caller then takes what is there. The queued
    /// signals are read off so the next wait waits.
    pub(super) fn wait(&self, within: Duration, also: Option<i32>) -> Result<(), TracerError> {
        let mut polls = [
            libc::pollfd { fd: self.signals, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: also.unwrap_or(-1), events: libc::POLLIN, revents: 0 },
        ];
        // `ppoll`, not `poll`: its timeout is finer than a millisecond, and `poll`'s would round
        // the first look's half millisecond (`TICK`) down to none, a look again at once.
        let timeout = libc::timespec {
            tv_sec: within.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: within.subsec_nanos() as libc::c_long,
        };
        // SAFETY: two pollfds on the stack (a negative fd is skipped by the kernel), a timeout on
        // the stack, no signal mask change.
        let ready = unsafe { libc::ppoll(polls.as_mut_ptr(), 2, &timeout, std::ptr::null()) };
        if ready < 0 && errno().raw_os_error() != Some(libc::EINTR) {
            return Err(TracerError::System { what: "poll", source: errno() });
        }
        let mut info = [0u8; 128];
        // SAFETY: reads queued signalfd_siginfo records into a local buffer (non-blocking fd).
        while unsafe { libc::read(self.signals, info.as_mut_ptr().cast(), info.len()) } > 0 {}
        Ok(())
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        // SAFETY: closes the fd opened in `new`.
        unsafe { libc::close(self.signals) };
    }
}
