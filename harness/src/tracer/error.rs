//! Why the tracer could not trace, and the exit status each reason gives: the harness tells a
//! system that refuses tracing (fall back) from a program that cannot run.

/// The tracer's exit status when the system does not let it trace (no ptrace or no seccomp, as in
/// some containers): the harness falls back to the probe or black-box.
pub const NOT_PERMITTED_EXIT: i32 = 125;

/// Why the tracer could not trace.
#[derive(Debug, thiserror::Error)]
pub enum TracerError {
    /// The system refuses tracing (ptrace or seccomp): exit [`NOT_PERMITTED_EXIT`].
    #[error("{}", not_permitted_message(.what, .source))]
    NotPermitted { what: &'static str, source: std::io::Error },
    #[error("killpoint-tracer: cannot run {program}: {source}")]
    Program { program: String, source: std::io::Error },
    #[error("killpoint-tracer: trace socket {path}: {source}")]
    Socket { path: String, source: std::io::Error },
    #[error("killpoint-tracer: trace log {path}: {source}")]
    Log { path: String, source: std::io::Error },
    #[error("killpoint-tracer: expected {{\"action\":\"resume\"}} from the harness, found {found}")]
    Answer { found: String },
    #[error(
        "killpoint-tracer: expected {{\"action\":\"decide\"}} or {{\"action\":\"settle\"}} from the harness at a settled runtime, found {found}"
    )]
    Turn { found: String },
    #[error("killpoint-tracer: {0}")]
    Setting(String),
    #[error("killpoint-tracer: {what}: {source}")]
    System { what: &'static str, source: std::io::Error },
}

impl TracerError {
    pub fn exit_code(&self) -> i32 {
        match self {
            TracerError::NotPermitted { .. } => NOT_PERMITTED_EXIT,
            TracerError::Program { .. } => 127,
            _ => 1,
        }
    }
}

/// The one line the tracer prints when it may not trace.
pub(super) fn not_permitted_message(what: &str, source: &std::io::Error) -> String {
    format!(
        "killpoint-tracer: syscall points are not available here: {what} was refused ({source}); \
         use the probe or black-box instead"
    )
}

pub(super) fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_permitted_says_what_was_refused_and_what_to_do() {
        let error = TracerError::NotPermitted {
            what: "ptrace (PTRACE_SEIZE)",
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        };
        assert_eq!(error.exit_code(), NOT_PERMITTED_EXIT);
        assert_eq!(
            error.to_string(),
            "killpoint-tracer: syscall points are not available here: ptrace (PTRACE_SEIZE) was refused \
             (Operation not permitted (os error 1)); use the probe or black-box instead"
        );
    }
}
