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
}

impl Call {
    pub const ALL: [Call; 24] = [
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
        }
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
const BPF_LD_W_ABS: u16 = BPF_LD | BPF_W | BPF_ABS;
const BPF_JMP_JEQ_K: u16 = BPF_JMP | BPF_JEQ | BPF_K;
const BPF_RET_K: u16 = BPF_RET | BPF_K;
const SECCOMP_DATA_NR: u32 = 0;
const SECCOMP_DATA_ARCH: u32 = 4;

/// The filter: stop (SECCOMP_RET_TRACE) at the calls in [`Call::ALL`], allow the rest.
pub(super) fn filter() -> Vec<libc::sock_filter> {
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let calls = Call::ALL;
    let mut program = vec![
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_ARCH),
        // Another ABI (i386 via int 0x80) has other numbers: let it through untraced.
        op(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        op(BPF_LD_W_ABS, 0, 0, SECCOMP_DATA_NR),
    ];
    for (i, call) in calls.iter().enumerate() {
        // On a match, jump over the remaining tests and the ALLOW to the TRACE.
        let skip = (calls.len() - i) as u8;
        program.push(op(BPF_JMP_JEQ_K, skip, 0, call.number() as u32));
    }
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_ALLOW));
    program.push(op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_TRACE));
    program
}
