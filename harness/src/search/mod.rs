//! Workloads searched rather than written: [`explore`] runs every crash point of a workload (depth 1
//! and 2, boundaries or system calls); [`random`] draws workloads and fault schedules and shrinks a
//! failure to a scenario file; [`replay`] runs a written case again before it is said to
//! reproduce; [`campaign`] is an exploration's record as a CI system reads it, one shard's or
//! several merged.
//!
//! Above `report` (a finding is told as a story); below `cli`.

pub mod campaign;
pub mod explore;
pub mod random;
pub mod replay;
pub mod schedules;
