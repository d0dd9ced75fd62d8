//! The words every part shares: where kills land ([`boundary`]), what a kill takes down
//! ([`crash`]), what is proven ([`invariant`]), and the reference runtime's planted mistakes
//! ([`variants`]).
//!
//! The bottom layer: imports nothing else of the crate.

pub mod boundary;
pub mod contract;
pub mod crash;
pub mod invariant;
pub mod variants;
