//! The harness end of the boundary probe (`CONTRACT.md`, section 7).
//!
//! The runtime connects to a Unix socket the harness listens on, writes one JSON line per
//! boundary and blocks until it reads `{"action":"resume"}`. Killing it instead of answering is
//! what makes a kill land exactly on the boundary.

use crate::model::boundary::Boundary;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// Longest probe line accepted; a runtime sending more is broken, not chatty.
pub const MAX_LINE: usize = 64 * 1024;

/// One boundary announcement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeMessage {
    pub boundary: Boundary,
    pub operation_id: String,
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
}

/// Parses one probe line; the error says what was expected and what was found.
pub fn parse(line: &str) -> Result<ProbeMessage, String> {
    serde_json::from_str(line).map_err(|e| {
        let shown: String = line.chars().take(200).collect();
        format!(
            "expected a probe message like {{\"boundary\":\"before_dispatch\",\"operation_id\":\"op-1\",\"attempt\":1}}, found `{shown}`: {e}"
        )
    })
}

/// One incarnation's probe connection.
pub struct ProbeConnection {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    buffer: Vec<u8>,
}

impl ProbeConnection {
    pub fn new(stream: UnixStream) -> Self {
        let (read, writer) = stream.into_split();
        ProbeConnection { reader: BufReader::new(read), writer, buffer: Vec::new() }
    }

    /// The next announcement; `Ok(None)` when the runtime closed the connection (it died).
    /// Cancel-safe for use in `select!`: a partial line stays in the buffer.
    pub async fn next(&mut self) -> Result<Option<ProbeMessage>, String> {
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line[..end]).into_owned();
                return parse(line.trim_end_matches('\r')).map(Some);
            }
            if self.buffer.len() > MAX_LINE {
                // Say what was seen, not only the limit: how much, and how it starts.
                let shown: String = String::from_utf8_lossy(&self.buffer[..80]).into_owned();
                return Err(format!(
                    "probe line longer than {MAX_LINE} bytes: expected one JSON message per line, found {} bytes without a newline, starting `{shown}…`",
                    self.buffer.len()
                ));
            }
            let available = self.reader.fill_buf().await.map_err(|e| format!("probe read failed: {e}"))?;
            if available.is_empty() {
                return Ok(None);
            }
            let n = available.len();
            self.buffer.extend_from_slice(available);
            self.reader.consume(n);
        }
    }

    /// Lets the runtime carry on past the boundary it announced.
    pub async fn resume(&mut self) -> Result<(), String> {
        self.writer.write_all(b"{\"action\":\"resume\"}\n").await.map_err(|e| format!("probe write failed: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_shapes() {
        let m = parse(r#"{"boundary":"before_dispatch","operation_id":"op-1","attempt":1}"#).unwrap();
        assert_eq!(m.boundary, Boundary::BeforeDispatch);
        let m = parse(r#"{"boundary":"after_delivery_send","operation_id":"op-1","attempt":2,"destination":"ledger"}"#)
            .unwrap();
        assert_eq!(m.destination.as_deref(), Some("ledger"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in ["", "{", "null", r#"{"boundary":"nope","operation_id":"x","attempt":1}"#, "\u{0}"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
