//! The bytes a service must send: the canonical response, adjusted only by what the service
//! declared in its start-up line.

use std::time::{Duration, SystemTime};

use ping_common::response::Reply;
use ping_common::startup::{StartupLine, deviation};

use crate::client::RawResponse;

/// Deviation ids beyond `ping_common::startup::deviation`, declared by services added later
/// (the service side spells the same string).
pub mod extra_deviation {
    /// The canonical header lines, in another order (e.g. actix-http: Content-Length and
    /// Connection first, the rest in hash-map order, Date last).
    pub const HEADER_ORDER: &str = "header-order";
    /// Request heads are refused only over 128 KiB (actix-http's hard-coded buffer limit), not
    /// over 64 KiB; a complete head below that is served.
    pub const HEAD_LIMIT_128K: &str = "head-limit-128k";
    /// Complete requests that arrive in the same read after one that ends the connection are
    /// answered too; the last answered one decides whether the connection closes (actix-http).
    pub const CLOSE_ANSWERS_PIPELINED: &str = "close-answers-pipelined";
}

/// Expected bytes of `reply` from this service, using the `Date` the response carried (after
/// checking that it is a valid, current RFC 7231 date).
pub fn expected(s: &StartupLine, reply: &Reply, close: bool, got: &RawResponse) -> Vec<u8> {
    let date = got
        .header("Date")
        .unwrap_or_else(|| panic!("{}: no Date header in {:?}", s.service, text(&got.bytes)));
    check_date(date);
    let server = if s.has_deviation(deviation::SERVER_HEADER) {
        s.server_header.clone()
    } else {
        assert_eq!(
            s.server_header, s.service,
            "Server header differs from the service name without a declared deviation"
        );
        s.service.clone()
    };
    let mut out = Vec::new();
    reply.encode_with_date(&server, date.as_bytes(), close, &mut out);
    let mut text = String::from_utf8(out).expect("canonical bytes are ASCII");
    if s.has_deviation(deviation::REASON_PHRASE_200) {
        text = text.replacen("HTTP/1.1 200 OK\r\n", "HTTP/1.1 200 Ok\r\n", 1);
    }
    if s.has_deviation(deviation::HEADER_ORDER_405) {
        text = text.replacen(
            "Allow: GET\r\nContent-Length: 0\r\n",
            "Content-Length: 0\r\nAllow: GET\r\n",
            1,
        );
    }
    if s.has_deviation(extra_deviation::HEADER_ORDER) {
        text = in_order_of(&text, &got.bytes);
    }
    text.into_bytes()
}

/// `want` with its header lines in the order `got` has them, if both have the same status
/// line, the same header lines (as a multiset) and the same body; else `want` unchanged, so
/// the byte comparison shows the difference.
fn in_order_of(want: &str, got: &[u8]) -> String {
    let got = String::from_utf8_lossy(got);
    let split = |t: &str| -> Option<(String, Vec<String>, String)> {
        let (head, body) = t.split_once("\r\n\r\n")?;
        let mut lines = head.split("\r\n");
        let status = lines.next()?.to_owned();
        Some((status, lines.map(str::to_owned).collect(), body.to_owned()))
    };
    let (Some((ws, wh, wb)), Some((gs, gh, gb))) = (split(want), split(&got)) else {
        return want.to_owned();
    };
    let sorted = |h: &[String]| {
        let mut h = h.to_vec();
        h.sort();
        h
    };
    if ws != gs || wb != gb || sorted(&wh) != sorted(&gh) {
        return want.to_owned();
    }
    format!("{gs}\r\n{}\r\n\r\n{gb}", gh.join("\r\n"))
}

/// Asserts the response bytes equal the expected canonical bytes.
pub fn assert_canonical(s: &StartupLine, reply: &Reply, close: bool, got: &RawResponse) {
    let want = expected(s, reply, close, got);
    assert_eq!(
        text(&got.bytes),
        text(&want),
        "{}: response differs from the canonical bytes",
        s.service
    );
}

/// A `Date` value must parse as an HTTP date and be within a few seconds of now.
pub fn check_date(value: &str) -> SystemTime {
    let t = httpdate::parse_http_date(value)
        .unwrap_or_else(|e| panic!("Date {value:?} is not an RFC 7231 date: {e}"));
    let now = SystemTime::now();
    let skew = now.duration_since(t).unwrap_or_else(|e| e.duration());
    assert!(
        skew <= Duration::from_secs(5),
        "Date {value:?} is {skew:?} away from now"
    );
    t
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
