//! The calls the tracer stops at, and the seccomp filter that stops them (classic BPF: compare
//! the architecture, then the call number against each entry of the table).

/// The calls the seccomp filter stops. Everything else runs untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Write,
    Pwrite64,
    Writev,
    Pwritev,
    Pwritev2,
    Fsync,
    Fdatasync,
    SyncFileRange,
    Sync,
    Syncfs,
    Rename,
    Renameat,
    Renameat2,
    Unlink,
    Unlinkat,
    Ftruncate,
    Truncate,
    Fallocate,
    Connect,
    Sendto,
    Sendmsg,
    Read,
    Recvfrom,
    Recvmsg,
    // Not crash points: what a runtime creates outside its data dir (CONTRACT.md §2-2), seen by
    // `escape`. `open` and `openat` stop only when their flags ask to write (see [`filter`]).
    Open,
    Openat,
    Openat2,
    Creat,
    Mkdir,
    Mkdirat,
}

impl Call {
    pub const ALL: [Call; 30] = [
        Call::Write,
        Call::Pwrite64,
        Call::Writev,
        Call::Pwritev,
        Call::Pwritev2,
        Call::Fsync,
        Call::Fdatasync,
        Call::SyncFileRange,
        Call::Sync,
        Call::Syncfs,
        Call::Rename,
        Call::Renameat,
        Call::Renameat2,
        Call::Unlink,
        Call::Unlinkat,
        Call::Ftruncate,
        Call::Truncate,
        Call::Fallocate,
        Call::Connect,
        Call::Sendto,
        Call::Sendmsg,
        Call::Read,
        Call::Recvfrom,
        Call::Recvmsg,
        Call::Open,
        Call::Openat,
        Call::Openat2,
        Call::Creat,
        Call::Mkdir,
        Call::Mkdirat,
    ];

    pub fn number(self) -> i64 {
        match self {
            Call::Write => libc::SYS_write,
            Call::Pwrite64 => libc::SYS_pwrite64,
            Call::Writev => libc::SYS_writev,
            Call::Pwritev => libc::SYS_pwritev,
            Call::Pwritev2 => libc::SYS_pwritev2,
            Call::Fsync => libc::SYS_fsync,
            Call::Fdatasync => libc::SYS_fdatasync,
            Call::SyncFileRange => libc::SYS_sync_file_range,
            Call::Sync => libc::SYS_sync,
            Call::Syncfs => libc::SYS_syncfs,
            Call::Rename => libc::SYS_rename,
            Call::Renameat => libc::SYS_renameat,
            Call::Renameat2 => libc::SYS_renameat2,
            Call::Unlink => libc::SYS_unlink,
            Call::Unlinkat => libc::SYS_unlinkat,
            Call::Ftruncate => libc::SYS_ftruncate,
            Call::Truncate => libc::SYS_truncate,
            Call::Fallocate => libc::SYS_fallocate,
            Call::Connect => libc::SYS_connect,
            Call::Sendto => libc::SYS_sendto,
            Call::Sendmsg => libc::SYS_sendmsg,
            Call::Read => libc::SYS_read,
            Call::Recvfrom => libc::SYS_recvfrom,
            Call::Recvmsg => libc::SYS_recvmsg,
            Call::Open => libc::SYS_open,
            Call::Openat => libc::SYS_openat,
            Call::Openat2 => libc::SYS_openat2,
            Call::Creat => libc::SYS_creat,
            Call::Mkdir => libc::SYS_mkdir,
            Call::Mkdirat => libc::SYS_mkdirat,
        }
    }

    /// A write or a send: where a thread puts bytes out.
    pub fn is_send(self) -> bool {
        matches!(self, Call::Write | Call::Writev | Call::Sendto | Call::Sendmsg)
    }

    /// A read or a receive: where a thread takes bytes in.
    pub fn is_receive(self) -> bool {
        matches!(self, Call::Read | Call::Recvfrom | Call::Recvmsg)
    }

    pub fn name(self) -> &'static str {
        match self {
            Call::Write => "write",
            Call::Pwrite64 => "pwrite64",
            Call::Writev => "writev",
            Call::Pwritev => "pwritev",
            Call::Pwritev2 => "pwritev2",
            Call::Fsync => "fsync",
            Call::Fdatasync => "fdatasync",
            Call::SyncFileRange => "sync_file_range",
            Call::Sync => "sync",
            Call::Syncfs => "syncfs",
            Call::Rename => "rename",
            Call::Renameat => "renameat",
            Call::Renameat2 => "renameat2",
            Call::Unlink => "unlink",
            Call::Unlinkat => "unlinkat",
            Call::Ftruncate => "ftruncate",
            Call::Truncate => "truncate",
            Call::Fallocate => "fallocate",
            Call::Connect => "connect",
            Call::Sendto => "sendto",
            Call::Sendmsg => "sendmsg",
            Call::Read => "read",
            Call::Recvfrom => "recvfrom",
            Call::Recvmsg => "recvmsg",
            Call::Open => "open",
            Call::Openat => "openat",
            Call::Openat2 => "openat2",
            Call::Creat => "creat",
            Call::Mkdir => "mkdir",
            Call::Mkdirat => "mkdirat",
        }
    }

    pub(super) fn from_number(nr: i64) -> Option<Call> {
        Call::ALL.into_iter().find(|call| call.number() == nr)
    }
}

// A seccomp number the libc crate does not export for every target (x86_64 Linux ABI).
const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
// Classic BPF opcodes are a class, a size or operation, and a source or mode, OR-ed together
// (linux/bpf_common.h); several parts are 0.
const BPF_LD: u16 = 0x00;
const BPF_W: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_JMP: u16 = 0x05;
const BPF_JEQ: u16 = 0x10;
const BPF_K: u16 = 0x00;
const BPF_RET: u16 = 0x06;
const BPF_JA: u16 = 0x00;
const BPF_JSET: u16 = 0x40;
const BPF_LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const BPF_JMP_JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K;
const BPF_RET_K: u16 = BPF_RET | BPF_K;
const BPF_JMP_JA: u16 = BPF_JMP | BPF_JA;
const BPF_JMP_JSET_K: u16 = BPF_JMP | BPF_JSET | BPF_K;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

/// The `open`/`openat` flags that can create or change a file. A read-only open (every import of
/// an interpreter, every shared library) is let through in the kernel, never stopped: tracing
/// them all would cost a stop per file read.
pub(super) const WRITE_FLAGS: u32 = (libc::O_WRONLY | libc::O_RDWR | libc::O_CREAT | libc::O_TRUNC) as u32;

/// Calls stopped only when their flags (the argument at this index) include [`WRITE_FLAGS`].
const BY_FLAGS: [(Call, u32); 2] = [(Call::Open, 1), (Call::Openat, 2)];

/// Where `seccomp_data.args[i]`'s low 32 bits are (nr, arch, instruction_pointer, then the u64
/// args; x86_64 is little-endian).
const fn argument_low(i: u32) -> u32 {
    16 + 8 * i
}

/// The filter: stop (SECCOMP_RET_TRACE) at the calls in [`Call::ALL`] (those in [`BY_FLAGS`] only
/// when they open to write), allow the rest.
///
/// Layout: the architecture check; one `JEQ nr` per plain call, jumping to the final TRACE; for
/// each call by flags, `JEQ nr` / load its flags / jump to the flags test; ALLOW; the flags test
/// (`JSET`: TRACE if any write flag, else ALLOW); TRACE.
pub(super) fn filter() -> Vec<libc::sock_filter> {
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let plain: Vec<Call> = Call::ALL.into_iter().filter(|c| BY_FLAGS.iter().all(|(f, _)| f != c)).collect();
    let mut program = vec![
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        // Another ABI (i386 via int 0x80) has other numbers: let it through untraced.
        op(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
    ];
    let flags_test = program.len() + plain.len() + 3 * BY_FLAGS.len() + 1;
    let trace = flags_test + 2;
    for call in &plain {
        // On a match, jump to the TRACE at the end.
        let skip = (trace - program.len() - 1) as u8;
        program.push(op(BPF_JMP_JEQ_K, skip, 0, call.number() as u32));
    }
    for (call, flags) in BY_FLAGS {
        program.push(op(BPF_JMP_JEQ_K, 0, 2, call.number() as u32));
        program.push(op(BPF_LD_W_ABS, 0, 0, argument_low(flags)));
        let to_test = (flags_test - program.len() - 1) as u32;
        program.push(op(BPF_JMP_JA, 0, 0, to_test));
    }
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    debug_assert_eq!(program.len(), flags_test);
    program.push(op(BPF_JMP_JSET_K, 1, 0, WRITE_FLAGS));
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_TRACE));
    program
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter on one call, as the kernel would: enough of classic BPF for its opcodes.
    fn verdict(nr: i64, args: [u64; 6]) -> u32 {
        let program = filter();
        let mut data = Vec::new();
        data.extend_from_slice(&(nr as i32).to_le_bytes());
        data.extend_from_slice(&AUDIT_ARCH_X86_64.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        args.iter().for_each(|a| data.extend_from_slice(&a.to_le_bytes()));
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let ins = program[pc];
            pc += 1;
            match ins.code {
                BPF_LD_W_ABS => a = u32::from_le_bytes(data[ins.k as usize..ins.k as usize + 4].try_into().unwrap()),
                BPF_JMP_JEQ_K => pc += usize::from(if a == ins.k { ins.jt } else { ins.jf }),
                BPF_JMP_JSET_K => pc += usize::from(if a & ins.k != 0 { ins.jt } else { ins.jf }),
                BPF_JMP_JA => pc += ins.k as usize,
                BPF_RET_K => return ins.k,
                other => panic!("opcode {other:#x} at {} is not one the filter uses", pc - 1),
            }
        }
    }

    #[test]
    fn the_filter_stops_traced_calls_and_opens_to_write_only() {
        let (trace, allow) = (libc::SECCOMP_RET_TRACE, libc::SECCOMP_RET_ALLOW);
        for call in Call::ALL.into_iter().filter(|c| !matches!(c, Call::Open | Call::Openat)) {
            assert_eq!(verdict(call.number(), [0; 6]), trace, "{}", call.name());
        }
        assert_eq!(verdict(libc::SYS_getpid, [0; 6]), allow);
        let flags = |f: i32| f as u32 as u64;
        assert_eq!(verdict(libc::SYS_openat, [0, 0, flags(libc::O_RDONLY | libc::O_CLOEXEC), 0, 0, 0]), allow);
        assert_eq!(verdict(libc::SYS_openat, [0, 0, flags(libc::O_WRONLY | libc::O_CREAT), 0, 0, 0]), trace);
        assert_eq!(verdict(libc::SYS_openat, [0, 0, flags(libc::O_RDWR), 0, 0, 0]), trace);
        // openat's flags are its third argument: a write flag's bit in its second (a path's
        // address) is no reason to stop.
        assert_eq!(verdict(libc::SYS_openat, [0, flags(libc::O_WRONLY), 0, 0, 0, 0]), allow);
        assert_eq!(verdict(libc::SYS_open, [0, flags(libc::O_TRUNC | libc::O_WRONLY), 0, 0, 0, 0]), trace);
        assert_eq!(verdict(libc::SYS_open, [0, flags(libc::O_RDONLY), 0, 0, 0, 0]), allow);
    }
}
