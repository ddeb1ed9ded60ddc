//! The bytes a service must send: the canonical response, adjusted only by what the service
//! declared in its start-up line.

use std::time::{Duration, SystemTime};

use ping_common::response::Reply;
use ping_common::startup::{StartupLine, deviation};

use crate::client::RawResponse;

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
    text.into_bytes()
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
