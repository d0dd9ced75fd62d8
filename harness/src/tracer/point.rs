//! The tracer's vocabulary: a crash point and its parts, as the harness reads them (one JSON line
//! each on the trace socket).

use serde::{Deserialize, Serialize};

/// Whether a point is just before the call runs or just after it returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum When {
    Before,
    After,
}

impl When {
    pub fn name(self) -> &'static str {
        match self {
            When::Before => "before",
            When::After => "after",
        }
    }
}

/// What a crash point changes or exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PointKind {
    /// Bytes written to (or a size change of) a file under the data dir.
    Durable,
    /// fsync/fdatasync/sync_file_range of a file (or the directory) under the data dir.
    Sync,
    Rename,
    Unlink,
    /// A connection to the fake world being opened.
    Connect,
    /// Bytes sent to the fake world.
    Request,
    /// Bytes received from the fake world (announced `after` only, and only when bytes arrived: a
    /// kill before a receive is the same as a kill after whatever came before it).
    Answer,
}

impl PointKind {
    pub(super) const ALL: [PointKind; 7] = [
        PointKind::Durable,
        PointKind::Sync,
        PointKind::Rename,
        PointKind::Unlink,
        PointKind::Connect,
        PointKind::Request,
        PointKind::Answer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PointKind::Durable => "durable",
            PointKind::Sync => "sync",
            PointKind::Rename => "rename",
            PointKind::Unlink => "unlink",
            PointKind::Connect => "connect",
            PointKind::Request => "request",
            PointKind::Answer => "answer",
        }
    }

    /// Durable-state points, as opposed to exchanges with the fake world.
    pub fn is_durable(self) -> bool {
        matches!(self, PointKind::Durable | PointKind::Sync | PointKind::Rename | PointKind::Unlink)
    }

    /// Whether a kill at this kind of point, `when`, is a crash point explored (and a crash state
    /// built there): syncs, renames and unlinks (before and after), requests (before), answers
    /// (after). Writes between two syncs, connects, a request's `after` and an answer's `before`
    /// leave the state of an explored point next to them.
    pub fn explored(self, when: When) -> bool {
        match self {
            PointKind::Sync | PointKind::Rename | PointKind::Unlink => true,
            PointKind::Request => when == When::Before,
            PointKind::Answer => when == When::After,
            PointKind::Durable | PointKind::Connect => false,
        }
    }
}

/// Which points the tracer waits for the harness's answer at: every one until the harness says
/// `go_on`, then none, or (`"ask":"explored"`, while crash states are built) the explored ones.
/// The tracer's channel and the harness's answering task each keep one, told the same lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Asking {
    #[default]
    Every,
    /// Explored points only ([`PointKind::explored`]): the harness builds crash states there.
    Explored,
    Never,
}

impl Asking {
    /// Whether a point of `kind`, `when`, waits for an answer.
    pub fn asks(self, kind: PointKind, when: When) -> bool {
        match self {
            Asking::Every => true,
            Asking::Explored => kind.explored(when),
            Asking::Never => false,
        }
    }
}

/// Which part of the fake world a socket talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    Provider,
    Consumers,
    Policy,
    /// The model that decides for task operations (CONTRACT.md section 12).
    Model,
    /// The fake world, which part not (yet) known: a `connect`, or bytes on a connection that
    /// has not named a path. The world serves all three under one address, told apart by path.
    World,
}

impl Peer {
    pub fn name(self) -> &'static str {
        match self {
            Peer::Provider => "provider",
            Peer::Consumers => "consumers",
            Peer::Policy => "policy",
            Peer::Model => "model",
            Peer::World => "world",
        }
    }
}

/// One crash point, as sent to the harness (one JSON line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// 1, 2, 3… within one tracer's life (one incarnation).
    pub n: u64,
    pub when: When,
    /// The system call's name, as in `man 2`.
    pub call: String,
    pub kind: PointKind,
    /// The file under the data dir (for a rename: its old name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A rename's new name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Peer>,
    /// Bytes the call asks to write or send (`before`), or the buffer's size for a receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The call's return value (`after` only): bytes done, 0, or minus errno.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ret: Option<i64>,
    /// A write through an fd opened `O_SYNC` or `O_DSYNC`: on disk when it returns, as if synced
    /// (read from `/proc/<tid>/fdinfo/<fd>`; the power-loss model needs it, a process kill not).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub synced: bool,
    pub tid: i32,
    /// Under a controlled schedule: the thread's label (`main.2`: the second thread `main`
    /// started; stable across runs where thread ids are not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Under a controlled schedule: the decision that let this call go (1, 2, …), on its
    /// `before` point and on its `after` point when the call ran alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// On a request to the world: the request as far as its bytes so far tell (a body written
    /// in a later call completes it there). On the answer that completes an exchange: the
    /// request it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<HttpRequest>,
    /// On the receive that completes an answer (its last byte arrived): the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<HttpAnswer>,
}

/// An HTTP/1 request to the fake world, as the tracer read it from the runtime's sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// The `Idempotency-Key` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The JSON body, once all of it was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

impl HttpRequest {
    /// The operation the request is for, where its body names it: a policy check's or a
    /// delivery's `operation_id`, or the identity the harness planted in a call's arguments (a
    /// lookup names none: it is attributed by its key or reference).
    pub fn operation(&self) -> Option<&str> {
        let body = self.body.as_ref()?;
        body.get("operation_id").or_else(|| body.pointer("/arguments/_killpoint/operation")).and_then(|v| v.as_str())
    }
}

/// A complete HTTP/1 answer from the fake world.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpAnswer {
    pub status: u16,
    /// The body, when it is JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
}

impl HttpAnswer {
    /// The world's refusal of an outlived incarnation (CONTRACT.md §9): `409 {"error":"fenced"}`.
    pub fn is_fenced(&self) -> bool {
        self.status == 409 && self.body.as_ref().and_then(|b| b.get("error")).and_then(|e| e.as_str()) == Some("fenced")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_serialise_as_documented() {
        let point = Point {
            n: 18,
            when: When::After,
            call: "sendto".to_owned(),
            kind: PointKind::Request,
            path: None,
            to: None,
            peer: Some(Peer::Provider),
            bytes: Some(310),
            ret: Some(310),
            synced: false,
            tid: 1234,
            thread: None,
            step: None,
            request: None,
            answer: None,
        };
        assert_eq!(
            serde_json::to_string(&point).unwrap(),
            r#"{"n":18,"when":"after","call":"sendto","kind":"request","peer":"provider","bytes":310,"ret":310,"tid":1234}"#
        );
    }
}
