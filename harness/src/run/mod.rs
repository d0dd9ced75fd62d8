//! Running one scenario against a runtime: [`driver`] plays the workload and its faults,
//! [`incarnation`] is one life of the runtime process, [`client`] its HTTP API, [`probe`] the
//! harness end of the boundary probe, [`traced`] the harness end of the tracer (and [`held`], an incarnation it holds frozen;
//! [`sent`] counts the requests it saw sent), [`preflight`] the checks before a first start, [`power_loss`] what a
//! machine crash leaves of the data dir, [`artifacts`] the directory a run lives in, [`services`] the processes beside the worker (a server that outlives it), and [`trace`] the
//! merged timeline of what happened; [`built`] the crash states built at system-call points of a
//! record run, from which a case runs only the recovery.
//!
//! Imports `model`, `tracer` and `scenario` only: a run knows nothing of verdicts or reports.

pub mod artifacts;
pub mod built;
pub mod client;
pub mod driver;
pub(crate) mod gone;
pub mod held;
pub mod incarnation;
pub mod one_off;
pub mod power_loss;
pub mod preflight;
pub mod probe;
pub mod ram;
pub mod retry_log;
pub mod scratch;
pub mod sent;
pub mod services;
pub mod sparse;
pub(crate) mod tether;
pub mod trace;
pub mod traced;
