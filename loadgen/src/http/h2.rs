//! HTTP/2 over cleartext with prior knowledge (h2c, RFC 9113 §3.3), the client side a load
//! generator needs: the connection preface, one request per stream as a single HEADERS frame
//! (its header block encoded once, literal fields without indexing, so requests never touch an
//! HPACK table and are the same bytes on every stream), and a framer for what comes back —
//! responses completed per stream, in any order, each header block read for its `:status`
//! (`hpack`); SETTINGS and PING acknowledged, the connection's receive window
//! kept open. Bodies are counted, never copied, and a DATA frame need not fit the read buffer.

use super::hpack::StatusDecoder;
use super::response::{ParseError, Response, Sent, Step};

/// What the client sends first on every connection.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

const FRAME_HEAD: usize = 9;
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const RST_STREAM: u8 = 0x3;
const SETTINGS: u8 = 0x4;
const PUSH_PROMISE: u8 = 0x5;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const WINDOW_UPDATE: u8 = 0x8;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// The largest window (2^31 − 1): every stream's, and the connection's once it is opened.
const MAX_WINDOW: u32 = 0x7fff_ffff;
/// The connection's receive window is topped up once this much of it was used.
const WINDOW_REFILL: u64 = 1 << 30;
/// The largest stream id: a connection that used them all is closed (1 billion requests).
const MAX_STREAM: u32 = 0x7fff_ffff;

/// Appends a frame header.
fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// An HPACK integer with an `n`-bit prefix whose high bits are `first` (RFC 7541 §5.1).
fn integer(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// A string literal, not Huffman-coded.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// A literal field without indexing: `name_index` of the static table, or a literal name.
fn field(out: &mut Vec<u8>, name_index: usize, name: &[u8], value: &[u8]) {
    if name_index > 0 {
        integer(out, 0x00, 4, name_index);
    } else {
        out.push(0x00);
        string(out, name);
    }
    string(out, value);
}

/// The request's header block: `GET`, `http`, the path and authority, then `headers` (names
/// lower-cased as HTTP/2 requires). Errors: a header HTTP/2 forbids (connection-specific), or
/// a block too large for one frame.
pub fn request_block(
    path: &str,
    authority: &str,
    headers: &[(String, String)],
) -> Result<Vec<u8>, String> {
    let mut b = Vec::new();
    b.push(0x80 | 2); // :method GET
    b.push(0x80 | 6); // :scheme http
    if path == "/" {
        b.push(0x80 | 4);
    } else {
        field(&mut b, 4, b"", path.as_bytes());
    }
    field(&mut b, 1, b"", authority.as_bytes());
    for (k, v) in headers {
        let name = k.to_ascii_lowercase();
        if matches!(
            name.as_str(),
            "connection"
                | "keep-alive"
                | "proxy-connection"
                | "transfer-encoding"
                | "upgrade"
                | "host"
        ) {
            return Err(format!(
                "header `{k}` has no place in an HTTP/2 request (RFC 9113 §8.2.2)"
            ));
        }
        field(&mut b, 0, name.as_bytes(), v.as_bytes());
    }
    if b.len() > 16_384 {
        return Err(format!(
            "the request's header block is {} bytes: more than one HTTP/2 frame (16,384)",
            b.len()
        ));
    }
    Ok(b)
}

/// One stream in flight: its id, and what its response has brought so far.
#[derive(Debug, Clone, Copy)]
struct Stream {
    id: u32,
    status: u16,
    body_bytes: u64,
    sent: Sent,
}

/// Where the framer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At a frame header.
    Frame,
    /// Inside a DATA frame's payload: `remaining` bytes to skip; the stream ends after it.
    Data {
        remaining: usize,
        stream: u32,
        end: bool,
    },
}

/// One connection's HTTP/2 state.
pub struct Session {
    decoder: StatusDecoder,
    next_stream: u32,
    streams: Vec<Stream>,
    state: State,
    /// A header block continued in CONTINUATION frames: its stream, END_STREAM, the fragments.
    pending: Option<(u32, bool)>,
    block: Vec<u8>,
    /// Receive window used since it was last topped up.
    used: u64,
    /// Bytes to send: the preface, requests, acknowledgements.
    pub out: Vec<u8>,
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}

impl Session {
    /// A new connection's session, its opening already in `out`: the preface, SETTINGS (no
    /// push; every stream's window the largest) and the connection's window opened as far.
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(PREFACE);
        frame_head(&mut out, 12, SETTINGS, 0, 0);
        out.extend_from_slice(&[0, 2, 0, 0, 0, 0]); // ENABLE_PUSH 0
        out.extend_from_slice(&[0, 4]); // INITIAL_WINDOW_SIZE
        out.extend_from_slice(&MAX_WINDOW.to_be_bytes());
        frame_head(&mut out, 4, WINDOW_UPDATE, 0, 0);
        out.extend_from_slice(&(MAX_WINDOW - 65_535).to_be_bytes());
        Self {
            decoder: StatusDecoder::new(),
            next_stream: 1,
            streams: Vec::new(),
            state: State::Frame,
            pending: None,
            block: Vec::new(),
            used: 0,
            out,
        }
    }

    /// Queues `n` requests (`block`, from [`request_block`]), one new stream each, sent as
    /// `sent` says; false when the connection's stream ids are spent.
    pub fn request(&mut self, n: u32, block: &[u8], sent: Sent) -> bool {
        for _ in 0..n {
            if self.next_stream > MAX_STREAM {
                return false;
            }
            let id = self.next_stream;
            self.next_stream += 2;
            frame_head(
                &mut self.out,
                block.len(),
                HEADERS,
                END_STREAM | END_HEADERS,
                id,
            );
            self.out.extend_from_slice(block);
            self.streams.push(Stream {
                id,
                status: 0,
                body_bytes: 0,
                sent,
            });
        }
        true
    }

    /// Streams sent and not yet answered.
    pub fn in_flight(&self) -> usize {
        self.streams.len()
    }

    fn stream(&mut self, id: u32) -> Result<usize, ParseError> {
        self.streams
            .iter()
            .position(|s| s.id == id)
            .ok_or(ParseError::H2("a frame on a stream not in flight"))
    }

    fn done(&mut self, i: usize, consumed: usize) -> Step {
        let s = self.streams.swap_remove(i);
        Step::Done {
            consumed,
            response: Response {
                status: s.status,
                body_bytes: s.body_bytes,
                close: false,
                stream: Some(s.sent),
            },
        }
    }

    /// Consumes whole frames of `buf` (and DATA payload as it comes), stopping after the frame
    /// that completes a response.
    pub fn feed(&mut self, buf: &[u8]) -> Step {
        let mut pos = 0;
        loop {
            let rest = &buf[pos..];
            if let State::Data {
                remaining,
                stream,
                end,
            } = self.state
            {
                let take = remaining.min(rest.len());
                pos += take;
                if take < remaining {
                    self.state = State::Data {
                        remaining: remaining - take,
                        stream,
                        end,
                    };
                    return Step::More { consumed: pos };
                }
                self.state = State::Frame;
                if end {
                    return match self.stream(stream) {
                        Ok(i) => self.done(i, pos),
                        Err(e) => Step::Error(e),
                    };
                }
                continue;
            }
            if rest.len() < FRAME_HEAD {
                return Step::More { consumed: pos };
            }
            let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
            let (kind, flags) = (rest[3], rest[4]);
            let id = u32::from_be_bytes([rest[5], rest[6], rest[7], rest[8]]) & MAX_STREAM;
            if self.pending.is_some() && kind != CONTINUATION {
                return Step::Error(ParseError::H2("a header block interrupted"));
            }
            if kind == DATA {
                // Counted from its header; the payload is skipped as it arrives.
                let pad = if flags & PADDED != 0 {
                    match rest.get(FRAME_HEAD) {
                        Some(&p) => 1 + p as usize,
                        None => return Step::More { consumed: pos },
                    }
                } else {
                    0
                };
                if pad > len {
                    return Step::Error(ParseError::H2("DATA padding longer than the frame"));
                }
                let i = match self.stream(id) {
                    Ok(i) => i,
                    Err(e) => return Step::Error(e),
                };
                self.streams[i].body_bytes += (len - pad) as u64;
                self.window(len);
                pos += FRAME_HEAD;
                self.state = State::Data {
                    remaining: len,
                    stream: id,
                    end: flags & END_STREAM != 0,
                };
                continue;
            }
            if rest.len() < FRAME_HEAD + len {
                // A frame larger than the connection's read buffer fills it, which the
                // connection reports as a parse error.
                return Step::More { consumed: pos };
            }
            let payload = &rest[FRAME_HEAD..FRAME_HEAD + len];
            pos += FRAME_HEAD + len;
            match kind {
                HEADERS => {
                    let mut p = payload;
                    let pad = if flags & PADDED != 0 {
                        let Some((&n, tail)) = p.split_first() else {
                            return Step::Error(ParseError::H2("HEADERS too short"));
                        };
                        p = tail;
                        n as usize
                    } else {
                        0
                    };
                    if flags & PRIORITY != 0 {
                        if p.len() < 5 {
                            return Step::Error(ParseError::H2("HEADERS too short"));
                        }
                        p = &p[5..];
                    }
                    if pad > p.len() {
                        return Step::Error(ParseError::H2(
                            "HEADERS padding longer than the frame",
                        ));
                    }
                    let fragment = &p[..p.len() - pad];
                    let end = flags & END_STREAM != 0;
                    if flags & END_HEADERS == 0 {
                        self.block.clear();
                        self.block.extend_from_slice(fragment);
                        self.pending = Some((id, end));
                        continue;
                    }
                    match self.headers(id, fragment, end, pos) {
                        Some(step) => return step,
                        None => continue,
                    }
                }
                CONTINUATION => {
                    let Some((stream, end)) = self.pending else {
                        return Step::Error(ParseError::H2("CONTINUATION without HEADERS"));
                    };
                    if stream != id {
                        return Step::Error(ParseError::H2("CONTINUATION on another stream"));
                    }
                    self.block.extend_from_slice(payload);
                    if flags & END_HEADERS != 0 {
                        self.pending = None;
                        let block = std::mem::take(&mut self.block);
                        let step = self.headers(id, &block, end, pos);
                        self.block = block;
                        if let Some(step) = step {
                            return step;
                        }
                    }
                }
                // Acknowledged (an acknowledgement of ours needs nothing).
                SETTINGS if flags & ACK == 0 => {
                    if !len.is_multiple_of(6) {
                        return Step::Error(ParseError::H2(
                            "SETTINGS of a length not a multiple of 6",
                        ));
                    }
                    frame_head(&mut self.out, 0, SETTINGS, ACK, 0);
                }
                PING if flags & ACK == 0 => {
                    if len != 8 {
                        return Step::Error(ParseError::H2("PING not 8 bytes"));
                    }
                    frame_head(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                RST_STREAM => {
                    return Step::Error(ParseError::H2("the server reset a stream (RST_STREAM)"));
                }
                GOAWAY => {
                    return Step::Error(ParseError::H2(
                        "the server closed the connection (GOAWAY)",
                    ));
                }
                PUSH_PROMISE => {
                    return Step::Error(ParseError::H2("PUSH_PROMISE, though push was disabled"));
                }
                // WINDOW_UPDATE (requests carry no body), PRIORITY, and unknown frames (§4.1).
                _ => {}
            }
        }
    }

    /// A complete header block on stream `id`: its `:status` if it is the first, the response
    /// done if it ends the stream (`Some`). 1xx heads are interim (§8.1).
    fn headers(&mut self, id: u32, block: &[u8], end: bool, consumed: usize) -> Option<Step> {
        let i = match self.stream(id) {
            Ok(i) => i,
            Err(e) => return Some(Step::Error(e)),
        };
        let status = match self.decoder.status(block) {
            Ok(s) => s,
            Err(e) => return Some(Step::Error(ParseError::H2(e))),
        };
        let s = &mut self.streams[i];
        if s.status == 0 || (100..200).contains(&s.status) {
            match status {
                Some(v) => s.status = v,
                None => return Some(Step::Error(ParseError::H2("a response without :status"))),
            }
        }
        end.then(|| self.done(i, consumed))
    }

    /// `n` bytes of DATA were received: the connection's window is topped up when a good part
    /// of it was used (streams' windows are the largest and each carries one response).
    fn window(&mut self, n: usize) {
        self.used += n as u64;
        if self.used >= WINDOW_REFILL {
            frame_head(&mut self.out, 4, WINDOW_UPDATE, 0, 0);
            self.out
                .extend_from_slice(&(self.used as u32).to_be_bytes());
            self.used = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loona_hpack::Decoder;

    const SENT: Sent = Sent {
        at_ns: 7,
        counted: true,
    };

    /// A server's frame.
    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        frame_head(&mut v, payload.len(), kind, flags, stream);
        v.extend_from_slice(payload);
        v
    }

    fn feed_all(s: &mut Session, mut buf: &[u8]) -> Vec<Response> {
        let mut out = Vec::new();
        loop {
            match s.feed(buf) {
                Step::Done { consumed, response } => {
                    out.push(response);
                    buf = &buf[consumed..];
                }
                Step::More { consumed } => {
                    assert_eq!(consumed, buf.len(), "all of it used");
                    return out;
                }
                Step::Error(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn the_opening_is_the_preface_settings_and_a_window() {
        let s = Session::new();
        assert!(s.out.starts_with(PREFACE));
        let settings = &s.out[PREFACE.len()..];
        assert_eq!(&settings[..9], &[0, 0, 12, SETTINGS, 0, 0, 0, 0, 0]);
        let wu = &settings[9 + 12..];
        assert_eq!(wu[3], WINDOW_UPDATE);
        assert_eq!(
            u32::from_be_bytes([wu[9], wu[10], wu[11], wu[12]]),
            MAX_WINDOW - 65_535
        );
    }

    #[test]
    fn requests_are_decodable_and_need_no_table() {
        let block = request_block(
            "/ping?x=1",
            "127.0.0.1:8080",
            &[("X-Trace".into(), "a".into())],
        )
        .unwrap();
        let mut d = Decoder::new();
        let fields = d.decode(&block).unwrap();
        let fields: Vec<(String, String)> = fields
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        assert_eq!(
            fields,
            [
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/ping?x=1"),
                (":authority", "127.0.0.1:8080"),
                ("x-trace", "a")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        // A second decode of the same bytes gives the same: nothing was indexed.
        assert_eq!(d.decode(&block).unwrap().len(), 5);
        let long = "/".to_string() + &"a".repeat(300);
        let block = request_block(&long, "h", &[]).unwrap();
        assert_eq!(Decoder::new().decode(&block).unwrap()[2].1, long.as_bytes());
        assert!(request_block("/", "h", &[("Connection".into(), "close".into())]).is_err());
        assert!(request_block("/", "h", &[("x".into(), "v".repeat(20_000))]).is_err());
    }

    #[test]
    fn streams_complete_in_any_order_with_their_bodies() {
        let mut s = Session::new();
        s.out.clear();
        assert!(s.request(3, &request_block("/", "h", &[]).unwrap(), SENT));
        assert_eq!(s.in_flight(), 3);
        let ok = [0x88]; // :status 200, static table
        let mut wire = frame(SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        wire.extend(frame(HEADERS, END_HEADERS, 3, &ok));
        wire.extend(frame(HEADERS, END_HEADERS | END_STREAM, 5, &[0x8d])); // 404
        wire.extend(frame(DATA, END_STREAM, 3, b"pong"));
        wire.extend(frame(PING, 0, 0, b"12345678"));
        wire.extend(frame(HEADERS, END_HEADERS, 1, &ok));
        wire.extend(frame(DATA, 0, 1, b"po"));
        wire.extend(frame(
            DATA,
            PADDED | END_STREAM,
            1,
            &[3, b'n', b'g', 0, 0, 0],
        ));
        let r = feed_all(&mut s, &wire);
        let got: Vec<(u16, u64)> = r.iter().map(|r| (r.status, r.body_bytes)).collect();
        assert_eq!(got, [(404, 0), (200, 4), (200, 4)]);
        assert_eq!(s.in_flight(), 0);
        // SETTINGS and PING were acknowledged.
        let mut acks = frame(SETTINGS, ACK, 0, &[]);
        acks.extend(frame(PING, ACK, 0, b"12345678"));
        assert!(s.out.ends_with(&acks));
    }

    #[test]
    fn frames_split_anywhere_parse_the_same() {
        let mut wire = frame(SETTINGS, 0, 0, &[]);
        wire.extend(frame(HEADERS, 0, 1, &[0x88]));
        wire.extend(frame(CONTINUATION, END_HEADERS, 1, &[]));
        wire.extend(frame(DATA, END_STREAM, 1, &[7; 40]));
        for cut in 1..wire.len() {
            let mut s = Session::new();
            s.request(1, &[0x82], SENT);
            let mut buf = wire[..cut].to_vec();
            let mut used = match s.feed(&buf) {
                Step::More { consumed } => consumed,
                other => panic!("cut {cut}: {other:?}"),
            };
            buf.drain(..used);
            buf.extend_from_slice(&wire[cut..]);
            used = 0;
            match s.feed(&buf[used..]) {
                Step::Done { response, .. } => {
                    assert_eq!(
                        (response.status, response.body_bytes),
                        (200, 40),
                        "cut {cut}"
                    )
                }
                other => panic!("cut {cut}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_server_s_refusals_are_errors() {
        for (kind, stream) in [(RST_STREAM, 1), (GOAWAY, 0), (PUSH_PROMISE, 1)] {
            let mut s = Session::new();
            s.request(1, &[0x82], SENT);
            let step = s.feed(&frame(kind, 0, stream, &[0; 8]));
            assert!(
                matches!(step, Step::Error(ParseError::H2(_))),
                "{kind}: {step:?}"
            );
        }
        let mut s = Session::new();
        s.request(1, &[0x82], SENT);
        assert!(matches!(
            s.feed(&frame(DATA, END_STREAM, 7, b"x")),
            Step::Error(_)
        ));
        let mut s = Session::new();
        s.request(1, &[0x82], SENT);
        assert!(matches!(
            s.feed(&frame(
                HEADERS,
                END_HEADERS,
                1,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
            )),
            Step::Error(_)
        ));
    }

    #[test]
    fn the_window_is_topped_up_after_a_gigabyte() {
        let mut s = Session::new();
        s.out.clear();
        for _ in 0..(WINDOW_REFILL / 16_384) {
            s.window(16_384);
        }
        assert_eq!(s.out.len(), 13);
        assert_eq!(s.used, 0);
    }
}
