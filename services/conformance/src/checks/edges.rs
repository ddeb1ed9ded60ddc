//! HTTP/1.1 edges where request framing decides what a service answers (RFC 9112): bytes that
//! follow a request ending the connection, `Content-Length` beside `Transfer-Encoding` (the
//! request-smuggling shape), an unusable `Content-Length` followed by more bytes, and the case
//! of an absolute-form target's scheme.

use std::time::Duration;

use ping_common::response::Reply;
use ping_common::route::Route;
use ping_common::startup::deviation;

use crate::client::{Conn, RawResponse, get};
use crate::expect::extra_deviation::CLOSE_ANSWERS_PIPELINED;
use crate::expect::{assert_canonical, text};
use crate::service::Service;

/// How long a connection that must close may take to do so.
const CLOSE_WAIT: Duration = Duration::from_secs(3);
/// How long a connection declared to stay open is watched.
const OPEN_WATCH: Duration = Duration::from_millis(400);

/// More bytes in the same write after a request that ends the connection (`Connection: close`,
/// HTTP/1.0 without keep-alive): the service answers that request, then closes, and answers
/// nothing that followed it. Declared `connection-close-ignored`: every complete request is
/// answered, in order, and the connection stays open. Declared `close-answers-pipelined`:
/// every complete request is answered, in order, and the connection closes if the last one
/// ends it, else stays open.
pub fn bytes_after_close(bin: &str) {
    let svc = Service::start(bin, &[]);
    let s = &svc.startup;
    let ignored = s.has_deviation(deviation::CONNECTION_CLOSE_IGNORED);
    let answers_all = s.has_deviation(CLOSE_ANSWERS_PIPELINED);
    let http10 = |target: &str| format!("GET {target} HTTP/1.0\r\nHost: x\r\n\r\n").into_bytes();
    // (what, bytes, complete requests in them, whether the last complete one ends the connection)
    let cases: [(&str, Vec<u8>, usize, bool); 3] = [
        (
            "Connection: close, then a GET",
            [get("/ping", "Connection: close\r\n"), get("/json", "")].concat(),
            2,
            false,
        ),
        (
            "two HTTP/1.0 requests",
            [http10("/ping"), http10("/json")].concat(),
            2,
            true,
        ),
        (
            "HTTP/1.0, then one stray byte",
            [http10("/ping"), b"x".to_vec()].concat(),
            1,
            true,
        ),
    ];
    for (what, bytes, complete, last_closes) in cases {
        let mut c = Conn::open(svc.addr());
        c.send_ok(&bytes);
        let first = c
            .read_response()
            .unwrap_or_else(|e| panic!("{bin}: {what}: the first request got no response: {e:?}"));
        check_ping(&svc, what, &first);
        if ignored || answers_all {
            for i in 1..complete {
                let r = c.expect_response(what);
                assert_eq!(
                    r.status, 200,
                    "{bin}: {what}: declared: request {i} answered"
                );
            }
            let closes = answers_all && last_closes;
            let watch = if closes { CLOSE_WAIT } else { OPEN_WATCH };
            assert_eq!(
                c.closes_within(watch),
                closes,
                "{bin}: {what}: as declared, the connection closes: {closes}"
            );
        } else {
            assert!(
                c.closes_within(CLOSE_WAIT),
                "{bin}: {what}: not closed after the response"
            );
            assert!(
                c.leftover().is_empty(),
                "{bin}: {what}: bytes after the response to the closing request: {:?}",
                text(c.leftover())
            );
        }
    }
}

/// The response to the first, connection-ending `/ping`: canonical for HTTP/1.1 with
/// `Connection: close`; status, version and body for HTTP/1.0 (the close header is not
/// canonicalised there).
fn check_ping(svc: &Service, what: &str, r: &RawResponse) {
    let s = &svc.startup;
    if what.starts_with("Connection: close") {
        let close = !s.has_deviation(deviation::CONNECTION_CLOSE_IGNORED);
        assert_canonical(s, &Reply::for_route(Route::Ping), close, r);
    } else {
        let version = if s.has_deviation(deviation::STATUS_LINE_HTTP10) {
            "HTTP/1.0"
        } else {
            "HTTP/1.1"
        };
        assert_eq!(
            (r.version.as_str(), r.status, r.body.as_slice()),
            (version, 200, &b"pong"[..]),
            "{}: {what}",
            s.service
        );
    }
}

/// Requests whose body length cannot be trusted, each followed in the same write by a second
/// request that only a wrong framing would see: `Content-Length` and `Transfer-Encoding`
/// together (RFC 9112 §6.1: reject, or frame by Transfer-Encoding and close after
/// responding), and an invalid, negative, overflowing or conflicting `Content-Length` (§6.3:
/// unrecoverable, 400 and close). The service answers at most the first request (400, or 405
/// for a `POST /ping` it framed by Transfer-Encoding) and closes; the second request is never
/// answered.
pub fn untrusted_body_length(bin: &str) {
    let svc = Service::start(bin, &[]);
    let smuggled = get("/json", "");
    let cases: [(&str, String); 6] = [
        (
            "Transfer-Encoding before Content-Length",
            "POST /ping HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n".into(),
        ),
        (
            "Content-Length before Transfer-Encoding",
            "POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".into(),
        ),
        (
            "Content-Length: -1",
            "GET /ping HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".into(),
        ),
        (
            "Content-Length: x",
            "GET /ping HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n".into(),
        ),
        (
            "Content-Length over u64",
            "GET /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n"
                .into(),
        ),
        (
            "two different Content-Length values",
            "GET /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 30\r\n\r\n"
                .into(),
        ),
    ];
    for (what, head) in cases {
        let mut c = Conn::open(svc.addr());
        // The peer may close (or reset) while this is still being written: that is a refusal.
        c.send(&[head.into_bytes(), smuggled.clone()].concat());
        match c.read_response() {
            Ok(r) => assert!(
                matches!(r.status, 400 | 405),
                "{bin}: {what}: answered {} {} (a wrong framing?)",
                r.status,
                r.reason
            ),
            Err(e) => assert!(
                e.is_close(),
                "{bin}: {what}: neither a response nor a close: {e:?}"
            ),
        }
        match c.read_response_within(CLOSE_WAIT) {
            Ok(r) => panic!(
                "{bin}: {what}: the request after it was answered ({} {}): a request-smuggling shape",
                r.status, r.reason
            ),
            Err(e) => assert!(
                e.is_close(),
                "{bin}: {what}: the connection stays open after an untrusted body length: {e:?}"
            ),
        }
        svc_alive(&svc);
    }
}

fn svc_alive(svc: &Service) {
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    assert_eq!(
        c.expect_response("/ping after an untrusted length").status,
        200
    );
}

/// An absolute-form target is routed by its path whatever the case of its scheme and host
/// (RFC 3986 §3.1, §3.2.2): `HTTP://EXAMPLE.COM/ping` is `/ping`.
pub fn absolute_form_scheme_case(bin: &str) {
    let svc = Service::start(bin, &[]);
    for (target, route) in [
        ("http://example.com/ping", Route::Ping),
        ("HTTP://EXAMPLE.COM/ping", Route::Ping),
        ("Http://Example.com:80/json?x=1", Route::Json),
    ] {
        let mut c = Conn::open(svc.addr());
        c.send_ok(&get(target, ""));
        let r = c.expect_response(target);
        assert_eq!(r.status, 200, "{bin}: GET {target}: {}", text(&r.bytes));
        assert_canonical(&svc.startup, &Reply::for_route(route), false, &r);
    }
}
