//! Reading a stopped thread's arguments out of its memory (`process_vm_readv`): strings, paths,
//! iovec arrays and `struct msghdr`s, as x86_64 lays them out.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::exchange::MESSAGE_LIMIT;

/// Where a receive's bytes land, to read them at its exit.
#[derive(Clone, Copy, Debug)]
pub(super) enum ReceiveBuffer {
    /// `read`/`recvfrom`: one buffer.
    Plain(u64),
    /// `recvmsg`: a `struct msghdr`.
    Message(u64),
}

/// Reads `len` bytes of the tracee's memory.
pub(super) fn read_memory(tid: i32, address: u64, len: usize) -> Option<Vec<u8>> {
    let mut buffer = vec![0u8; len];
    let local = libc::iovec { iov_base: buffer.as_mut_ptr().cast(), iov_len: len };
    let remote = libc::iovec { iov_base: address as *mut _, iov_len: len };
    // SAFETY: writes at most `len` bytes into `buffer`.
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    (n == len as isize).then_some(buffer)
}

/// A NUL-terminated string in the tracee, read page by page (the next page may be unmapped).
fn read_string(tid: i32, address: u64) -> Option<Vec<u8>> {
    const PAGE: u64 = 4096;
    let mut out = Vec::new();
    let mut at = address;
    while out.len() < libc::PATH_MAX as usize {
        let chunk = read_memory(tid, at, (PAGE - at % PAGE) as usize)?;
        if let Some(end) = chunk.iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..end]);
            return Some(out);
        }
        at += chunk.len() as u64;
        out.extend_from_slice(&chunk);
    }
    None
}

/// A path argument made absolute against its directory fd (or the thread's cwd).
pub(super) fn resolve_path(tid: i32, dirfd: i32, address: u64) -> Option<PathBuf> {
    let path = PathBuf::from(OsStr::from_bytes(&read_string(tid, address)?));
    if path.is_absolute() {
        return Some(path);
    }
    let base = if dirfd == libc::AT_FDCWD {
        std::fs::read_link(format!("/proc/{tid}/cwd")).ok()?
    } else {
        std::fs::read_link(format!("/proc/{tid}/fd/{dirfd}")).ok()?
    };
    Some(base.join(path))
}

pub(super) fn iovec_bytes(tid: i32, address: u64, count: u64) -> Option<u64> {
    let count = usize::try_from(count).ok().filter(|&c| c <= 1024)?;
    let raw = read_memory(tid, address, count * 16)?;
    Some(raw.chunks_exact(16).map(|iov| u64::from_ne_bytes(iov[8..16].try_into().unwrap())).sum())
}

/// What an iovec array holds, up to `limit` bytes.
pub(super) fn iovec_contents(tid: i32, address: u64, count: u64, limit: usize) -> Option<Vec<u8>> {
    let count = usize::try_from(count).ok().filter(|&c| c <= 1024)?;
    let raw = read_memory(tid, address, count * 16)?;
    let mut out = Vec::new();
    for iov in raw.chunks_exact(16) {
        let base = u64::from_ne_bytes(iov[0..8].try_into().ok()?);
        let len = u64::from_ne_bytes(iov[8..16].try_into().ok()?) as usize;
        let take = len.min(limit - out.len());
        out.extend_from_slice(&read_memory(tid, base, take)?);
        if out.len() == limit {
            break;
        }
    }
    Some(out)
}

/// What a `struct msghdr`'s iovecs hold (msg_iov at offset 16, msg_iovlen at 24 on x86_64).
pub(super) fn msghdr_contents(tid: i32, address: u64) -> Option<Vec<u8>> {
    let raw = read_memory(tid, address, 32)?;
    let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
    let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
    iovec_contents(tid, iov, len, MESSAGE_LIMIT)
}

/// The `n` bytes a receive just put in its buffer(s).
pub(super) fn received_bytes(tid: i32, buffer: ReceiveBuffer, n: usize) -> Option<Vec<u8>> {
    let n = n.min(MESSAGE_LIMIT);
    match buffer {
        ReceiveBuffer::Plain(address) => read_memory(tid, address, n),
        ReceiveBuffer::Message(address) => {
            let raw = read_memory(tid, address, 32)?;
            let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
            let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
            iovec_contents(tid, iov, len, n)
        }
    }
}

/// The bytes a `struct msghdr`'s iovecs hold (msg_iov at offset 16, msg_iovlen at 24 on x86_64).
pub(super) fn msghdr_bytes(tid: i32, address: u64) -> Option<u64> {
    let raw = read_memory(tid, address, 32)?;
    let iov = u64::from_ne_bytes(raw[16..24].try_into().ok()?);
    let len = u64::from_ne_bytes(raw[24..32].try_into().ok()?);
    iovec_bytes(tid, iov, len)
}
