//! A traced call between its `before` point and its `after`: what the tracer read of it at its
//! entry, kept for its exit.

use super::memory::ReceiveBuffer;
use super::point::{HttpRequest, Peer, PointKind};
use super::seccomp::Call;

/// A call stopped at its `before` point, waiting for its `after`.
#[derive(Clone, Debug)]
pub(super) struct Pending {
    pub(super) call: Call,
    pub(super) kind: PointKind,
    pub(super) path: Option<String>,
    pub(super) to: Option<String>,
    pub(super) peer: Option<Peer>,
    pub(super) bytes: Option<u64>,
    /// A write to a data-dir file through an fd opened `O_SYNC`/`O_DSYNC`.
    pub(super) synced: bool,
    /// A request's bytes told this about it (see [`Exchange::sent`]).
    pub(super) request: Option<HttpRequest>,
    /// A receive from the world: its socket and where the bytes land, to read them at its exit.
    pub(super) receive: Option<Receive>,
    /// A send to the world: its socket's inode. Its bytes are in the socket's exchange from the
    /// call's entry on, but reach the world only once the call runs.
    pub(super) sending: Option<u64>,
}

impl Pending {
    /// A point with no rename target, request or receive.
    pub(super) fn new(
        call: Call,
        kind: PointKind,
        path: Option<String>,
        peer: Option<Peer>,
        bytes: Option<u64>,
    ) -> Pending {
        Pending { call, kind, path, to: None, peer, bytes, synced: false, request: None, receive: None, sending: None }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Receive {
    pub(super) inode: u64,
    pub(super) buffer: ReceiveBuffer,
}
