//! Where a connection's requests end, as far as a request that closes the connection is
//! concerned: [`Framer`] follows the request stream (heads parsed with httparse, bodies
//! counted by `Content-Length`) and says how much of each read may reach hyper.
//!
//! Why: with `pipeline_flush`, hyper flushes its buffered responses only once its read buffer
//! is empty. After a request that ends the connection (`Connection: close`, HTTP/1.0 without
//! keep-alive) it stops reading, so bytes that followed in the same read stay in that buffer,
//! the flush never happens and the connection is shut down with the response unwritten
//! (hyper 1.12 `Buffered::poll_flush`/`poll_shutdown`). Handing hyper nothing past the end of
//! such a request keeps its read buffer empty: it answers, then closes, as the contract says.
//! The bytes after it are dropped unread, as every other service does.

use ping_common::MAX_HEAD_BYTES;

/// Request headers parsed per head: hyper's own default limit (`h1_max_headers`).
const MAX_HEADERS: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At (or inside) a request head; a partial head is in `Framer::carry`.
    Head,
    /// Inside a body: `left_bytes` more, then the next head, or the end if `closing`.
    Body { left_bytes: u64, closing: bool },
    /// A request that ends the connection was handed over whole: nothing more is.
    Closed,
    /// Framing we do not follow (chunked, a bad head or length): everything is handed over
    /// and hyper decides, as without this layer.
    Passthrough,
}

/// Follows one connection's request stream.
#[derive(Debug)]
pub struct Framer {
    state: State,
    /// The bytes of a head that is not complete yet (only when a head spans reads).
    carry: Vec<u8>,
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            state: State::Head,
            carry: Vec::new(),
        }
    }
}

/// One parsed head, as framing sees it.
struct Head {
    len: usize,
    body_bytes: u64,
    closing: bool,
}

enum Parsed {
    Complete(Head),
    Partial,
    /// Not followed: hand everything to hyper.
    Unfollowed,
}

impl Framer {
    /// `bytes` were just read from the socket: how many of them, from the start, hyper may
    /// see. Less than `bytes.len()` only after a request that closes the connection; `0` once
    /// such a request was handed over.
    pub fn feed(&mut self, bytes: &[u8]) -> usize {
        let mut at = 0;
        loop {
            match self.state {
                State::Passthrough => return bytes.len(),
                State::Closed => return at,
                State::Body {
                    left_bytes,
                    closing,
                } => {
                    let rest = (bytes.len() - at) as u64;
                    let take = left_bytes.min(rest);
                    at += take as usize;
                    if take < left_bytes {
                        self.state = State::Body {
                            left_bytes: left_bytes - take,
                            closing,
                        };
                        return at;
                    }
                    self.state = if closing { State::Closed } else { State::Head };
                }
                State::Head => {
                    if at == bytes.len() {
                        return at;
                    }
                    let carried = self.carry.len();
                    let parsed = if carried == 0 {
                        parse(&bytes[at..])
                    } else {
                        self.carry.extend_from_slice(&bytes[at..]);
                        parse(&self.carry)
                    };
                    match parsed {
                        Parsed::Unfollowed => {
                            self.carry = Vec::new();
                            self.state = State::Passthrough;
                        }
                        Parsed::Partial => {
                            if carried == 0 {
                                self.carry.extend_from_slice(&bytes[at..]);
                            }
                            if self.carry.len() > MAX_HEAD_BYTES {
                                self.carry = Vec::new();
                                self.state = State::Passthrough;
                            }
                            return bytes.len();
                        }
                        Parsed::Complete(head) => {
                            // The head's bytes in this read (some may have come earlier).
                            at += head.len - carried;
                            self.carry.clear();
                            self.state = match (head.body_bytes, head.closing) {
                                (0, true) => State::Closed,
                                (0, false) => State::Head,
                                (left_bytes, closing) => State::Body {
                                    left_bytes,
                                    closing,
                                },
                            };
                        }
                    }
                }
            }
        }
    }
}

fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Unfollowed,
    };
    // HTTP/1.0 closes unless it asks for keep-alive; HTTP/1.1 closes when it asks to (RFC
    // 9112 §9.3), as hyper decides.
    let mut closing = req.version != Some(1);
    let mut body_bytes = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if token.eq_ignore_ascii_case(b"close") {
                    closing = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && req.version == Some(0) {
                    closing = false;
                }
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Unfollowed;
        } else if h.name.eq_ignore_ascii_case("content-length") {
            match (ping_common::route::content_length(h.value), body_bytes) {
                (Some(n), None) => body_bytes = Some(n),
                (Some(n), Some(prev)) if n == prev => {}
                _ => return Parsed::Unfollowed,
            }
        }
    }
    Parsed::Complete(Head {
        len,
        body_bytes: body_bytes.unwrap_or(0),
        closing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEEP: &[u8] = b"GET /ping HTTP/1.1\r\nHost: a\r\n\r\n";
    const CLOSE: &[u8] = b"GET /ping HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    const HTTP10: &[u8] = b"GET /ping HTTP/1.0\r\n\r\n";

    fn fed(parts: &[&[u8]]) -> Vec<usize> {
        let mut f = Framer::default();
        parts.iter().map(|p| f.feed(p)).collect()
    }

    #[test]
    fn keep_alive_requests_pass_whole() {
        let batch = [KEEP, KEEP, KEEP].concat();
        assert_eq!(fed(&[&batch, KEEP]), vec![batch.len(), KEEP.len()]);
    }

    #[test]
    fn nothing_passes_after_a_closing_request() {
        let batch = [KEEP, CLOSE, KEEP].concat();
        assert_eq!(fed(&[&batch, KEEP]), vec![KEEP.len() + CLOSE.len(), 0]);
        let two10 = [HTTP10, HTTP10].concat();
        assert_eq!(fed(&[&two10]), vec![HTTP10.len()]);
        assert_eq!(fed(&[&[HTTP10, b"x"].concat()]), vec![HTTP10.len()]);
        let upper = b"GET / HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\nx";
        assert_eq!(fed(&[upper]), vec![upper.len() - 1]);
    }

    #[test]
    fn http10_keep_alive_is_not_closing() {
        let ka = b"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        let batch = [&ka[..], KEEP].concat();
        assert_eq!(fed(&[&batch]), vec![batch.len()]);
    }

    #[test]
    fn heads_and_bodies_split_across_reads() {
        let post = b"POST /ping HTTP/1.1\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello";
        let mut all = post.to_vec();
        all.extend_from_slice(KEEP);
        // One byte per read: every byte of the closing request passes, nothing after it.
        let mut f = Framer::default();
        let passed: usize = all.iter().map(|b| f.feed(std::slice::from_ref(b))).sum();
        assert_eq!(passed, post.len());
        // A head split in two, then its body and more in one read.
        let (a, b) = post.split_at(10);
        let rest = [b, KEEP].concat();
        assert_eq!(fed(&[a, &rest]), vec![a.len(), b.len()]);
        // A body containing what looks like a closing head is only a body.
        let sly =
            b"POST /ping HTTP/1.1\r\nContent-Length: 30\r\n\r\nGET / HTTP/1.0\r\nX: y\r\n\r\n1234";
        let batch = [&sly[..], KEEP].concat();
        assert_eq!(fed(&[&batch]), vec![batch.len()]);
    }

    #[test]
    fn unfollowed_framing_passes_everything() {
        for head in [
            &b"POST /ping HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"[..],
            b"GET /ping HTTP/1.1\r\nContent-Length: -1\r\nConnection: close\r\n\r\n",
            b"GET /ping HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"\x00\x01garbage\r\n\r\n",
        ] {
            let batch = [head, CLOSE, KEEP].concat();
            assert_eq!(fed(&[&batch, KEEP]), vec![batch.len(), KEEP.len()], "{head:?}");
        }
    }

    #[test]
    fn a_head_over_the_limit_is_left_to_hyper() {
        let mut f = Framer::default();
        let big = vec![b'a'; MAX_HEAD_BYTES + 1];
        let start = b"GET /ping HTTP/1.1\r\nX: ";
        assert_eq!(f.feed(start), start.len());
        assert_eq!(f.feed(&big), big.len());
        let rest = [b"\r\n\r\n", CLOSE, KEEP].concat();
        assert_eq!(f.feed(&rest), rest.len());
    }
}
