//! The tracer's end of the trace socket: lines out, answers in. Under a controlled schedule the
//! harness also says, unasked, whether the tracer may decide without asking it: `{"action":"free"}`
//! while it has nothing of its own to deliver, `{"action":"ask"}` once it has (see
//! `run::traced::turn` in the harness). Those lines may come before any answer, so every read of
//! an answer takes them first.
//!
//! A point's answer may also be `{"action":"go_on"}`: resume, and every point after it without
//! waiting for an answer (the harness has nothing left to decide at this incarnation's points:
//! `run::traced`); the tracer then only tells them (`Asking::Never`). Or
//! `{"action":"go_on","ask":"explored"}`: the harness still builds a crash state at each explored
//! point (`PointKind::explored`), so those are still asked, and only the others told
//! (`Asking::Explored`).

use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use super::error::TracerError;
use super::point::Asking;

const FREE: &str = r#"{"action":"free"}"#;
const ASK: &str = r#"{"action":"ask"}"#;

pub(super) struct Channel {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    /// The socket's path, for what goes wrong on it.
    path: PathBuf,
    /// Whether the harness last said `free`.
    free: bool,
    /// Whether the harness closed its end (a read returned nothing).
    closed: bool,
    /// Which points wait for the harness's answer: every one until it answers `go_on`.
    pub(super) asking: Asking,
}

impl Channel {
    /// The harness's socket at `path`, connected.
    pub(super) fn connect(path: &Path) -> Result<Channel, TracerError> {
        let failed = |source| TracerError::Socket { path: path.display().to_string(), source };
        let stream = UnixStream::connect(path).map_err(failed)?;
        let reader = BufReader::new(stream.try_clone().map_err(failed)?);
        Ok(Channel { reader, writer: stream, path: path.to_owned(), free: false, closed: false, asking: Asking::Every })
    }

    fn failed(&self, source: std::io::Error) -> TracerError {
        TracerError::Socket { path: self.path.display().to_string(), source }
    }

    pub(super) fn send(&mut self, line: &str) -> Result<(), TracerError> {
        self.writer.write_all(line.as_bytes()).map_err(|e| self.failed(e))
    }

    /// The next line that answers what was sent, trimmed; `None` once the harness closed the
    /// socket.
    pub(super) fn answer(&mut self) -> Result<Option<String>, TracerError> {
        while let Some(line) = self.line()? {
            if !self.mode(&line) {
                return Ok(Some(line));
            }
        }
        Ok(None)
    }

    /// Whether the tracer may decide without asking: the harness's `free` or `ask` lines already
    /// here are read first, without waiting for any. A line that is neither is an error.
    pub(super) fn free(&mut self) -> Result<bool, TracerError> {
        self.news()?;
        Ok(self.free)
    }

    /// The descriptor the harness's lines come in on, to wait on; none once it is closed (it
    /// would be readable for ever, and every wait would end at once).
    pub(super) fn fd(&self) -> Option<i32> {
        (!self.closed).then(|| self.reader.get_ref().as_raw_fd())
    }

    /// Reads the harness's `free` or `ask` lines already here, without waiting for any; whether
    /// there was one. A line that is neither is an error.
    pub(super) fn news(&mut self) -> Result<bool, TracerError> {
        let mut any = false;
        while self.readable()? {
            let Some(line) = self.line()? else { break };
            if !self.mode(&line) {
                let found = format!("`{line}` where only `free` or `ask` may come unasked");
                return Err(self.failed(std::io::Error::new(std::io::ErrorKind::InvalidData, found)));
            }
            any = true;
        }
        Ok(any)
    }

    /// The next line, trimmed, waiting for it; `None` (and closed) at the end of the stream.
    fn line(&mut self) -> Result<Option<String>, TracerError> {
        let mut line = String::new();
        let read = self.reader.read_line(&mut line).map_err(|e| self.failed(e))?;
        self.closed |= read == 0;
        Ok((read > 0).then(|| line.trim().to_owned()))
    }

    fn mode(&mut self, line: &str) -> bool {
        match line {
            FREE => self.free = true,
            ASK => self.free = false,
            _ => return false,
        }
        true
    }

    /// Whether a line (or the harness's close) is there to read now.
    fn readable(&self) -> Result<bool, TracerError> {
        if !self.reader.buffer().is_empty() {
            return Ok(true);
        }
        let mut poll = libc::pollfd { fd: self.reader.get_ref().as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd on a descriptor this channel owns; no wait.
        let ready = unsafe { libc::poll(&mut poll, 1, 0) };
        if ready < 0 {
            return Err(self.failed(std::io::Error::last_os_error()));
        }
        Ok(ready > 0 && poll.revents & (libc::POLLIN | libc::POLLHUP) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_s_unasked_lines_are_taken_before_an_answer_and_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let mut channel = Channel::connect(&path).unwrap();
        let (mut harness, _) = listener.accept().unwrap();
        assert!(!channel.free().unwrap(), "nothing said yet: ask");
        harness.write_all(b"{\"action\":\"free\"}\n").unwrap();
        assert!(channel.free().unwrap());
        harness.write_all(b"{\"action\":\"ask\"}\n{\"action\":\"resume\"}\n").unwrap();
        assert_eq!(channel.answer().unwrap().as_deref(), Some(r#"{"action":"resume"}"#));
        assert!(!channel.free().unwrap(), "the `ask` before the answer counts");
        harness.write_all(b"{\"action\":\"decide\"}\n").unwrap();
        assert!(channel.free().is_err(), "an answer where none was asked for");
        assert!(channel.fd().is_some());
        drop(harness);
        assert!(!channel.news().unwrap(), "a closed socket says nothing");
        assert_eq!(channel.fd(), None, "closed: no longer waited on");
        assert_eq!(channel.answer().unwrap(), None);
    }
}
