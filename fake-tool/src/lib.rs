//! killpoint's fake world: a tool provider, downstream consumers and a policy service on
//! loopback, each writing what the runtime did to it into one [`Ledger`].
//!
//! The harness runs it in-process ([`World::start`]); `killpoint-fake-tool` runs it standalone.
//! Faults ([`ProviderFault`], [`ConsumerFault`]) make it hold or fail an answer after (or before)
//! the side effect happened, which is where runtimes go wrong.

pub(crate) mod consumers;
pub mod faults;
pub mod fence;
pub mod kill_point;
pub mod ledger;
pub mod model;
pub mod pairs;
pub mod policy;
pub(crate) mod provider;
pub mod revocation;
pub mod signals;
pub mod snapshot;
pub mod world;

pub use faults::{
    ConsumerFault, ConsumerHold, FaultResponse, LookupFault, ModelFault, PolicyFault, PolicySubject, ProviderFault,
};
pub use kill_point::KillPoint;
pub use ledger::{
    Clock, Effect, Entry, Event, Injected, Ledger, ModelAnswer, PolicyAnswer, Response, Service, Subject, ToolKind,
};
pub use model::{ModelScript, task_marker};
pub use provider::KEY_REUSED;
pub use revocation::Revocation;
pub use signals::DuplicateKeys;
pub use snapshot::{WorldSnapshot, WorldState};
pub use world::World;
