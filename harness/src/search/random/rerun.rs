//! The command lines a failure is told with: the one that reruns its scenario file, and the words
//! for the runtime it failed against.

use crate::report::evidence::shell_word;
use crate::run::driver::RunOptions;
use crate::run::incarnation::Target;
use std::path::Path;

/// ` --runtime PATH -- ARGS…` for a command line.
pub(super) fn runtime_flags(target: &Target) -> String {
    let mut line = format!(" --runtime {}", shell_word(&target.program.display().to_string()));
    if !target.args.is_empty() {
        line.push_str(" --");
        for a in &target.args {
            line.push(' ');
            line.push_str(&shell_word(a));
        }
    }
    line
}

/// ` --services FILE` when the runtime declares services in a file, else nothing.
pub(super) fn services_flag(options: &RunOptions) -> String {
    match &options.services.file {
        Some(file) => format!(" --services {}", shell_word(&file.display().to_string())),
        None => String::new(),
    }
}

pub(super) fn target_words(target: &Target) -> String {
    let mut words = target.program.display().to_string();
    for a in &target.args {
        words.push(' ');
        words.push_str(a);
    }
    words
}

/// `/abs/killpoint run FILE --runtime PATH [--points syscalls] [--no-probe] -- ARGS…`: the
/// shared replay line of [`crate::report::evidence::replay_command`].
pub fn rerun_command(file: &Path, target: &Target, options: &RunOptions) -> String {
    crate::report::evidence::replay_command(file, target, options)
}
