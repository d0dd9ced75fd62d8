//! libtest's command line for a `harness = false` test target, with every filter it was given.
//!
//! libtest runs the tests matching any of its positional filters (`cargo test -- langgraph
//! dbos`); libtest-mimic 0.8 takes one and exits on the second ("unexpected argument"), and no
//! release takes more (its pull request 59 is open). So the filters are taken off the command
//! line here, libtest-mimic parses the rest, and two or more filters select the trials before it
//! runs them: a trial runs when any filter matches its name (the whole name with `--exact`).

use libtest_mimic::{Arguments, Conclusion, Trial};
use std::ffi::OsString;

/// The options of libtest-mimic's command line that take a value in the next argument.
const TAKES_VALUE: [&str; 6] = ["--test-threads", "--logfile", "--skip", "--color", "--format", "-Z"];

/// What `cargo test -- …` passed: libtest-mimic's options, and the filters.
pub struct TestArguments {
    /// Everything but the filters (`filter` holds the one filter when there is only one).
    pub libtest: Arguments,
    /// Two or more filters, applied before libtest-mimic runs; empty when it filters itself.
    filters: Vec<String>,
}

/// How many trials run at once when `--test-threads` is not given: `RUST_TEST_THREADS`, as libtest
/// reads it (libtest-mimic does not), or twice the cores. A trial mostly waits — on a runtime's
/// start-up, a restart, a backoff, a server — so as many trials as cores leave the cores idle:
/// `tests/scenarios.rs` took 70 s with 2 at once on 2 cores (51 s of CPU), 50 s with 4, 50 s with 6.
fn default_threads() -> Option<usize> {
    let given = std::env::var("RUST_TEST_THREADS").ok().and_then(|n| n.parse::<usize>().ok()).filter(|&n| n > 0);
    given.or_else(|| std::thread::available_parallelism().ok().map(|cores| cores.get() * 2))
}

/// Sets `RUST_TEST_THREADS` to [`default_threads`] where it is not set, for a `#[test]` binary
/// whose tests mostly wait as trials do (`tests/integration.rs`, `harness/tests/integration.rs`):
/// libtest runs as many as there are cores, and reads the variable as `main` starts, so they call
/// this from a constructor (`ctor`), before `main`.
///
/// # Safety
/// Only before `main`, or while no other thread reads or writes the environment.
pub unsafe fn default_test_threads_before_main() {
    if std::env::var_os("RUST_TEST_THREADS").is_none()
        && let Some(threads) = default_threads()
    {
        // SAFETY: the caller's promise: no other thread touches the environment.
        unsafe { std::env::set_var("RUST_TEST_THREADS", threads.to_string()) };
    }
}

impl TestArguments {
    /// The test binary's own command line.
    pub fn from_args() -> TestArguments {
        TestArguments::parse(std::env::args_os())
    }

    /// A command line, the program's name first. Exits (as libtest-mimic does) on a bad option.
    pub fn parse(args: impl IntoIterator<Item = impl Into<OsString>>) -> TestArguments {
        let mut options = Vec::new();
        let mut filters = Vec::new();
        let mut args = args.into_iter().map(Into::into);
        options.extend(args.next());
        let mut positional_only = false;
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy();
            if positional_only || !text.starts_with('-') {
                filters.push(text.into_owned());
            } else if text == "--" {
                positional_only = true;
            } else {
                let takes_value = TAKES_VALUE.contains(&text.as_ref());
                options.push(arg);
                if takes_value {
                    options.extend(args.next());
                }
            }
        }
        if filters.len() == 1 {
            options.append(&mut filters.iter().map(OsString::from).collect());
            filters.clear();
        }
        let mut libtest = Arguments::from_iter(options);
        libtest.test_threads = libtest.test_threads.or_else(default_threads);
        TestArguments { libtest, filters }
    }

    /// Runs the trials the filters select, as libtest-mimic's `run` does.
    /// (libtest-mimic's "filtered out" count then leaves out the trials these filters took.)
    pub fn run(&self, trials: Vec<Trial>) -> Conclusion {
        libtest_mimic::run(&self.libtest, self.select(trials))
    }

    /// The trials two or more filters select (all of them otherwise: libtest-mimic filters).
    fn select(&self, mut trials: Vec<Trial>) -> Vec<Trial> {
        if !self.filters.is_empty() {
            trials.retain(|trial| self.filters.iter().any(|filter| self.matches(filter, trial)));
        }
        trials
    }

    fn matches(&self, filter: &str, trial: &Trial) -> bool {
        // As libtest-mimic matches its one filter: the name, or `[kind] name` as `--list` shows it.
        let with_kind = if trial.kind().is_empty() {
            trial.name().to_owned()
        } else {
            format!("[{}] {}", trial.kind(), trial.name())
        };
        if self.libtest.exact { trial.name() == filter || with_kind == filter } else { with_kind.contains(filter) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selected(args: &[&str]) -> Vec<String> {
        let args = TestArguments::parse(std::iter::once("test").chain(args.iter().copied()));
        let names = ["frameworks::langgraph::naive", "frameworks::dbos::naive", "frameworks::python_kit", "dbos"];
        let mut trials = args.select(names.iter().map(|name| Trial::test(*name, || Ok(()))).collect());
        trials.retain(|trial| !args.libtest.is_filtered_out(trial));
        trials.iter().map(|trial| trial.name().to_owned()).collect()
    }

    #[test]
    fn test_threads_given_win_and_otherwise_a_default_is_set() {
        let given = TestArguments::parse(["test", "--test-threads", "3"]);
        assert_eq!(given.libtest.test_threads, Some(3));
        let default = TestArguments::parse(["test"]);
        assert!(default.libtest.test_threads.is_some_and(|n| n >= 1), "{:?}", default.libtest.test_threads);
    }

    #[test]
    fn every_filter_selects_as_libtest_does() {
        let both = ["frameworks::langgraph::naive", "frameworks::dbos::naive", "dbos"];
        assert_eq!(selected(&["langgraph", "dbos"]), both);
        // Options before, between and after the filters keep their values.
        assert_eq!(selected(&["--test-threads", "2", "langgraph", "--skip", "python", "dbos", "--nocapture"]), both);
        assert_eq!(selected(&["--exact", "dbos", "frameworks::python_kit"]), ["frameworks::python_kit", "dbos"]);
        assert_eq!(selected(&["kit"]), ["frameworks::python_kit"]);
        assert_eq!(selected(&["--skip", "naive"]), ["frameworks::python_kit", "dbos"]);
        assert_eq!(selected(&["nothing", "matches"]), Vec::<String>::new());
        assert_eq!(selected(&["--", "--odd", "dbos"]).len(), 2);
    }
}
