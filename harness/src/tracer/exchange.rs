//! HTTP/1 as it passes on a world socket: the request the runtime sends, then the answer it
//! receives, read from the bytes of each call without holding up the runtime.

use super::point::{HttpAnswer, HttpRequest};

/// The bytes of one exchange on a world socket, as they pass: the request being sent, then its
/// answer arriving. HTTP/1 with keep-alive: a new request line starts the next exchange.
#[derive(Debug, Default)]
pub(super) struct Exchange {
    pub(super) request: Option<HttpRequest>,
    /// The request's body bytes so far, and how many its `Content-Length` promised.
    request_body: Vec<u8>,
    request_length: Option<usize>,
    answer: Vec<u8>,
    /// The request's answer arrived whole.
    answered: bool,
    /// Requests started on this socket so far: tells one exchange from the next.
    pub(super) serial: u64,
    /// The thread that last sent on the socket, and its file descriptor there.
    pub(super) holder: Option<(i32, i32)>,
}

/// The most of one message the tracer copies out of the runtime: the world's messages are small,
/// and a bigger one is simply not parsed.
pub(super) const MESSAGE_LIMIT: usize = 64 * 1024;

/// Where `(head, body)` of an HTTP/1 message split, and its headers.
fn split_head(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    Some((&bytes[..end], &bytes[end + 4..]))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

impl Exchange {
    /// Bytes the runtime sends on this socket. A request line starts a new exchange; anything else
    /// continues the current request's body.
    pub(super) fn sent(&mut self, bytes: &[u8]) {
        if request_path(bytes).is_some() {
            *self = Exchange { serial: self.serial + 1, holder: self.holder, ..Exchange::default() };
            let Some((head, body)) = split_head(bytes) else {
                // The head itself spans sends: only its request line is known.
                let line =
                    String::from_utf8_lossy(bytes.split(|&b| b == b'\r').next().unwrap_or_default()).into_owned();
                let mut words = line.split(' ');
                self.request = Some(HttpRequest {
                    method: words.next().unwrap_or_default().to_owned(),
                    path: words.next().unwrap_or_default().to_owned(),
                    ..HttpRequest::default()
                });
                return;
            };
            let head = String::from_utf8_lossy(head);
            let mut words = head.split("\r\n").next().unwrap_or_default().split(' ');
            self.request = Some(HttpRequest {
                method: words.next().unwrap_or_default().to_owned(),
                path: words.next().unwrap_or_default().to_owned(),
                key: header(&head, "idempotency-key").map(str::to_owned),
                body: None,
            });
            self.request_length = header(&head, "content-length").and_then(|v| v.parse().ok());
            self.request_body = body.to_vec();
        } else if self.request.is_some() && self.request_body.len() < MESSAGE_LIMIT {
            self.request_body.extend_from_slice(bytes);
        }
        if let Some(request) = &mut self.request
            && request.body.is_none()
            && self.request_length.is_some_and(|n| n > 0 && self.request_body.len() >= n)
        {
            request.body = serde_json::from_slice(&self.request_body).ok();
        }
    }

    /// Whether the request was sent whole and its answer has not arrived whole: an answer is on
    /// its way (a controlled schedule waits for it, `schedule`).
    pub(super) fn awaiting_answer(&self) -> bool {
        let sent = self.request_length.is_none_or(|n| self.request_body.len() >= n);
        self.request.is_some() && sent && !self.answered
    }

    /// Bytes received on this socket: the answer once its last byte arrived (by `Content-Length`,
    /// or the last chunk of a chunked one).
    pub(super) fn received(&mut self, bytes: &[u8]) -> Option<(Option<HttpRequest>, HttpAnswer)> {
        if self.answer.len() + bytes.len() > MESSAGE_LIMIT {
            return None;
        }
        self.answer.extend_from_slice(bytes);
        let (head, body) = split_head(&self.answer)?;
        let head = String::from_utf8_lossy(head).into_owned();
        let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
        let body = if header(&head, "transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
            dechunk(body)?
        } else {
            let length: usize = header(&head, "content-length")?.parse().ok()?;
            body.get(..length)?.to_vec()
        };
        self.answer.clear();
        self.answered = true;
        let answer = HttpAnswer { status, body: serde_json::from_slice(&body).ok() };
        Some((self.request.clone(), answer))
    }
}

/// A complete chunked body, joined; `None` until its last (empty) chunk arrived.
fn dechunk(mut bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let end = bytes.windows(2).position(|w| w == b"\r\n")?;
        let size =
            usize::from_str_radix(std::str::from_utf8(&bytes[..end]).ok()?.split(';').next()?.trim(), 16).ok()?;
        bytes = &bytes[end + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(bytes.get(..size)?);
        bytes = bytes.get(size + 2..)?;
    }
}

/// The path of an HTTP/1 request line at the start of `head` (`POST /provider/x HTTP/1.1`).
pub(super) fn request_path(head: &[u8]) -> Option<&str> {
    let line = head.split(|&b| b == b'\r' || b == b'\n').next()?;
    let mut words = std::str::from_utf8(line).ok()?.split(' ');
    let method = words.next()?;
    let path = words.next()?;
    (method.bytes().all(|b| b.is_ascii_uppercase()) && path.starts_with('/')).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_is_read_from_the_bytes_as_they_pass() {
        let mut exchange = Exchange::default();
        // Head and body in two sends (as some clients write them): the body completes the request.
        let body = br#"{"operation_id": "op-1", "tool": "charge_card"}"#;
        let head = format!(
            "POST /policy/check HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nIdempotency-Key: k-1\r\n\r\n",
            body.len()
        );
        exchange.sent(head.as_bytes());
        let request = exchange.request.clone().unwrap();
        assert_eq!(
            (request.method.as_str(), request.path.as_str(), request.key.as_deref()),
            ("POST", "/policy/check", Some("k-1"))
        );
        assert_eq!(request.body, None, "the body has not been sent yet");
        exchange.sent(body);
        let body = exchange.request.clone().unwrap().body.unwrap();
        assert_eq!(body["operation_id"], "op-1");
        // The answer in pieces: complete only when Content-Length is reached.
        assert_eq!(exchange.received(b"HTTP/1.1 200 OK\r\ncontent-length: 16\r\n\r\n{\"allowed\""), None);
        let (answered, answer) = exchange.received(b":true}").unwrap();
        assert_eq!(answer, HttpAnswer { status: 200, body: Some(serde_json::json!({"allowed": true})) });
        assert_eq!(answered.unwrap().path, "/policy/check");
        // Keep-alive: the next request line starts the next exchange.
        exchange.sent(b"GET /provider/tools/charge_card/effects?idempotency_key=k-1 HTTP/1.1\r\n\r\n");
        assert_eq!(exchange.request.clone().unwrap().method, "GET");
        let chunked = b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        assert_eq!(
            exchange.received(chunked).unwrap().1,
            HttpAnswer { status: 404, body: Some(serde_json::json!({})) }
        );
    }
}
