//! What people and machines read of a run: [`story`] (tables, the matrix, a failure's story),
//! [`timeline`] (a run's events on one clock), [`outcome`] (one scenario's result),
//! [`schedule`] (a scheduled run's decisions, thread by thread), [`checklist`] (the seed's
//! acceptance questions), [`certificate`] (JSON and JUnit),
//! [`html`] (its timelines drawn by `svg`, its text made safe by `markup`), [`evidence`] (what a
//! kept run directory holds, `rerun.sh`), and [`certify`] (a whole certification: run, judge,
//! report).
//!
//! Reporters read runs and verdicts; they import `model`, `scenario`, `run` and `judge`, never
//! `search` or `cli`.

pub mod certificate;
pub mod certify;
pub mod checklist;
pub mod evidence;
pub mod html;
mod markup;
pub mod otlp;
pub mod outcome;
pub mod schedule;
pub mod story;
mod svg;
pub mod timeline;
