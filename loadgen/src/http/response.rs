//! Incremental HTTP/1.1 response framer. Heads are parsed with `httparse` (zero-copy, stack
//! header array); bodies are skipped by Content-Length or chunk sizes without copying, so a
//! connection needs one fixed read buffer only large enough for a response head.

use std::mem::MaybeUninit;

use thiserror::Error;

/// Most headers accepted in one response head.
pub const MAX_HEADERS: usize = 64;

#[derive(Debug, Error, PartialEq, Eq, Clone, Copy)]
pub enum ParseError {
    #[error("malformed response head: {0}")]
    Head(&'static str),
    #[error("bad Content-Length")]
    ContentLength,
    #[error("bad chunk framing")]
    Chunk,
    #[error("HTTP/2: {0}")]
    H2(&'static str),
}

/// One complete response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body_bytes: u64,
    /// The server will close (or already closed) the connection after this response.
    pub close: bool,
    /// h2c: when its stream was sent, and whether inside the measured window (a connection's
    /// streams are sent one by one); `None` for HTTP/1.1, whose batch shares the connection's.
    pub stream: Option<Sent>,
}

/// When a request was sent, and whether it counts (it was sent inside the measured window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub at_ns: u64,
    pub counted: bool,
}

/// Result of feeding buffered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A response finished after `consumed` bytes.
    Done {
        consumed: usize,
        response: Response,
    },
    /// All `consumed` bytes were used (possibly 0); more input is needed.
    More {
        consumed: usize,
    },
    Error(ParseError),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Body {
        remaining: u64,
    },
    ChunkSize,
    ChunkData {
        remaining: u64,
    },
    ChunkCrlf,
    Trailers,
    /// No length given: the body runs until the server closes.
    UntilClose,
}

#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    status: u16,
    body_bytes: u64,
    close: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        Self {
            state: State::Head,
            status: 0,
            body_bytes: 0,
            close: false,
        }
    }

    /// Forget any partial response (after the connection is dropped).
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// The peer closed: a body delimited by close is complete now; anything else partial is
    /// an error reported by the caller.
    pub fn on_eof(&mut self) -> Option<Response> {
        if self.state == State::UntilClose {
            let r = self.finish();
            return Some(r);
        }
        None
    }

    fn finish(&mut self) -> Response {
        let r = Response {
            status: self.status,
            body_bytes: self.body_bytes,
            close: self.close,
            stream: None,
        };
        self.reset();
        r
    }

    /// Consume as much of `buf` as possible, stopping after one complete response.
    pub fn feed(&mut self, buf: &[u8]) -> Step {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            match self.state {
                State::Head => match self.head(rest) {
                    Ok(Some(n)) => {
                        pos += n;
                        if self.state == State::Head {
                            // Interim 1xx response: keep going.
                            continue;
                        }
                        if let State::Body { remaining: 0 } = self.state {
                            return Step::Done {
                                consumed: pos,
                                response: self.finish(),
                            };
                        }
                    }
                    Ok(None) => return Step::More { consumed: pos },
                    Err(e) => return Step::Error(e),
                },
                State::Body { remaining } => {
                    let take = remaining.min(rest.len() as u64);
                    pos += take as usize;
                    self.body_bytes += take;
                    if take == remaining {
                        return Step::Done {
                            consumed: pos,
                            response: self.finish(),
                        };
                    }
                    self.state = State::Body {
                        remaining: remaining - take,
                    };
                    return Step::More { consumed: pos };
                }
                State::ChunkSize => match httparse::parse_chunk_size(rest) {
                    Ok(httparse::Status::Complete((n, 0))) => {
                        pos += n;
                        self.state = State::Trailers;
                    }
                    Ok(httparse::Status::Complete((n, size))) => {
                        pos += n;
                        self.state = State::ChunkData { remaining: size };
                    }
                    Ok(httparse::Status::Partial) => return Step::More { consumed: pos },
                    Err(_) => return Step::Error(ParseError::Chunk),
                },
                State::ChunkData { remaining } => {
                    let take = remaining.min(rest.len() as u64);
                    pos += take as usize;
                    self.body_bytes += take;
                    if take < remaining {
                        self.state = State::ChunkData {
                            remaining: remaining - take,
                        };
                        return Step::More { consumed: pos };
                    }
                    self.state = State::ChunkCrlf;
                }
                State::ChunkCrlf => {
                    if rest.len() < 2 {
                        return Step::More { consumed: pos };
                    }
                    if &rest[..2] != b"\r\n" {
                        return Step::Error(ParseError::Chunk);
                    }
                    pos += 2;
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    // Trailer lines end with an empty line; skip them without interpreting.
                    let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
                        return Step::More { consumed: pos };
                    };
                    pos += eol + 2;
                    if eol == 0 {
                        return Step::Done {
                            consumed: pos,
                            response: self.finish(),
                        };
                    }
                }
                State::UntilClose => {
                    self.body_bytes += rest.len() as u64;
                    return Step::More {
                        consumed: buf.len(),
                    };
                }
            }
        }
    }

    /// Parse a head; sets the body state. `Ok(None)` = incomplete.
    fn head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        // Uninitialized header slots: zeroing 64 of them would cost more than the parse.
        let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut []);
        let n = match httparse::ParserConfig::default()
            .parse_response_with_uninit_headers(&mut resp, buf, &mut slots)
        {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(httparse::Error::TooManyHeaders) => {
                return Err(ParseError::Head("too many headers"));
            }
            Err(_) => return Err(ParseError::Head("invalid syntax")),
        };
        let status = resp.code.unwrap_or(0);
        let http10 = resp.version == Some(0);
        let mut content_length: Option<u64> = None;
        let mut chunked = false;
        let mut close = http10;
        for h in resp.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let v = parse_u64(h.value).ok_or(ParseError::ContentLength)?;
                if content_length.is_some_and(|c| c != v) {
                    return Err(ParseError::ContentLength);
                }
                content_length = Some(v);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = contains_token(h.value, b"chunked");
            } else if name.eq_ignore_ascii_case(b"connection") {
                if contains_token(h.value, b"close") {
                    close = true;
                } else if contains_token(h.value, b"keep-alive") {
                    close = false;
                }
            }
        }
        if (100..200).contains(&status) {
            // Interim response: no body, the real one follows.
            return Ok(Some(n));
        }
        self.status = status;
        self.body_bytes = 0;
        self.close = close;
        self.state = if status == 204 || status == 304 {
            State::Body { remaining: 0 }
        } else if chunked {
            State::ChunkSize
        } else if let Some(cl) = content_length {
            State::Body { remaining: cl }
        } else {
            self.close = true;
            State::UntilClose
        };
        Ok(Some(n))
    }
}

fn parse_u64(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + (b - b'0') as u64)
    })
}

/// Case-insensitive token search in a comma-separated header value.
fn contains_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut ResponseParser, mut buf: &[u8]) -> Vec<Response> {
        let mut out = Vec::new();
        loop {
            match p.feed(buf) {
                Step::Done { consumed, response } => {
                    out.push(response);
                    buf = &buf[consumed..];
                }
                Step::More { .. } => return out,
                Step::Error(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn content_length_pipelined() {
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";
        let buf: Vec<u8> = one.repeat(3);
        let mut p = ResponseParser::new();
        let rs = all(&mut p, &buf);
        assert_eq!(rs.len(), 3);
        assert!(
            rs.iter()
                .all(|r| r.status == 200 && r.body_bytes == 4 && !r.close)
        );
    }

    #[test]
    fn split_at_every_byte() {
        let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npong\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
        for cut in 0..=msg.len() {
            let mut p = ResponseParser::new();
            let (mut start, mut got) = (0, None);
            for end in [cut, msg.len()] {
                match p.feed(&msg[start..end]) {
                    Step::Done { consumed, response } => {
                        start += consumed;
                        got = Some(response);
                        break;
                    }
                    Step::More { consumed } => start += consumed,
                    Step::Error(e) => panic!("cut {cut}: {e}"),
                }
            }
            let r = got.unwrap_or_else(|| panic!("cut {cut}: incomplete"));
            assert_eq!(
                (r.status, r.body_bytes, start),
                (200, 7, msg.len()),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn close_and_eof_bodies() {
        let mut p = ResponseParser::new();
        let rs = all(
            &mut p,
            b"HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
        );
        assert_eq!(
            rs[0],
            Response {
                status: 503,
                body_bytes: 0,
                close: true,
                stream: None,
            }
        );
        let mut p = ResponseParser::new();
        assert!(all(&mut p, b"HTTP/1.0 200 OK\r\n\r\nabc").is_empty());
        assert_eq!(
            p.on_eof(),
            Some(Response {
                status: 200,
                body_bytes: 3,
                close: true,
                stream: None,
            })
        );
        let mut p = ResponseParser::new();
        let rs = all(
            &mut p,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        );
        assert_eq!(rs[0].status, 204);
    }

    #[test]
    fn rejects_garbage() {
        let mut p = ResponseParser::new();
        assert!(matches!(p.feed(b"NOT HTTP\r\n\r\n"), Step::Error(_)));
        let mut p = ResponseParser::new();
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            Step::Error(ParseError::ContentLength)
        ));
        let mut p = ResponseParser::new();
        assert!(matches!(
            p.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
            Step::Error(ParseError::Chunk)
        ));
    }
}
