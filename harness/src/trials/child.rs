//! A helper program a test runs to its end under a deadline: in a process group of its own that
//! dies with the test (PR_SET_PDEATHSIG) and is killed whole past the deadline, then reaped. The
//! harness's own one-off checks run the same way: one implementation, `crate::run::one_off`.

pub use crate::run::one_off::{NotFinished, output_within};
