//! Connection contract: keep-alive, pipelining, split requests, `Connection: close`, HTTP/1.0.

use std::time::Duration;

use ping_common::response::Reply;
use ping_common::route::Route;
use ping_common::startup::deviation;

use crate::client::{Conn, NoResponse, get};
use crate::expect::{assert_canonical, expected, text};
use crate::service::Service;

/// How long a connection that should close may take to do so; and how long one that should
/// stay open is watched.
const CLOSE_WAIT: Duration = Duration::from_secs(3);
const OPEN_WATCH: Duration = Duration::from_millis(400);

pub fn keep_alive(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    for i in 0..10 {
        let target = if i % 2 == 0 { "/ping" } else { "/json" };
        c.send_ok(&get(target, ""));
        assert_eq!(c.expect_response(target).status, 200, "request {i}");
    }
    assert!(
        !c.closes_within(OPEN_WATCH),
        "keep-alive connection was closed"
    );
}

/// 64 requests in one segment are all answered, in order.
pub fn pipelined_64(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    let kinds = [
        (Route::Ping, "/ping"),
        (Route::Json, "/json"),
        (Route::NotFound, "/missing"),
    ];
    let routes: Vec<Route> = (0..64).map(|i| kinds[i % 3].0).collect();
    let batch: Vec<u8> = (0..64).flat_map(|i| get(kinds[i % 3].1, "")).collect();
    c.send_ok(&batch);
    for (i, r) in routes.iter().enumerate() {
        let got = c.expect_response(&format!("pipelined #{i}"));
        assert_eq!(
            text(&got.bytes),
            text(&expected(&svc.startup, &Reply::for_route(*r), false, &got)),
            "pipelined response #{i}"
        );
    }
}

/// A request dribbled one byte per segment is answered, and so is the next one.
pub fn split_request(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    let req = get("/ping", "X-Split: yes\r\n");
    for b in &req {
        c.send_ok(std::slice::from_ref(b));
        std::thread::sleep(Duration::from_millis(2));
    }
    let r = c.expect_response("split request");
    assert_canonical(&svc.startup, &Reply::for_route(Route::Ping), false, &r);
    // A second request split mid-line, and a third that starts in the same segment.
    let two = [get("/json", ""), get("/ping", "")].concat();
    let (a, b) = two.split_at(7);
    let (b, rest) = b.split_at(b.len() - 10);
    for part in [a, b, rest] {
        c.send_ok(part);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.expect_response("split json").body.len(), 27);
    assert_eq!(c.expect_response("split ping").body, b"pong");
}

/// `Connection: close` → respond, then close (or, if declared, stay open).
pub fn connection_close(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", "Connection: close\r\n"));
    let r = c.expect_response("Connection: close");
    let s = &svc.startup;
    if s.has_deviation(deviation::CONNECTION_CLOSE_IGNORED) {
        assert_canonical(s, &Reply::for_route(Route::Ping), false, &r);
        assert!(
            !c.closes_within(OPEN_WATCH),
            "declared: connection stays open"
        );
        c.send_ok(&get("/ping", ""));
        assert_eq!(c.expect_response("after ignored close").status, 200);
    } else {
        assert_canonical(s, &Reply::for_route(Route::Ping), true, &r);
        assert!(
            c.closes_within(CLOSE_WAIT),
            "not closed after Connection: close"
        );
        assert!(c.leftover().is_empty(), "bytes after the response");
    }
}

/// HTTP/1.0 without keep-alive → respond, then close (or, if declared, stay open).
pub fn http10_close(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    c.send_ok(b"GET /ping HTTP/1.0\r\nHost: x\r\n\r\n");
    let r = c.expect_response("HTTP/1.0");
    let s = &svc.startup;
    let want_version = if s.has_deviation(deviation::STATUS_LINE_HTTP10) {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    };
    assert_eq!(r.version, want_version);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
    if s.has_deviation(deviation::CONNECTION_CLOSE_IGNORED) {
        assert!(
            !c.closes_within(OPEN_WATCH),
            "declared: connection stays open"
        );
    } else {
        assert!(
            c.closes_within(CLOSE_WAIT),
            "HTTP/1.0 connection not closed"
        );
    }
}

/// Requests pipelined before the client half-closes: how many.
const HALF_CLOSE_REQUESTS: usize = 200;

/// Half-close: a client sends requests, then `shutdown(SHUT_WR)` (its FIN) and keeps reading.
/// Every complete request received before the FIN is answered, in order, then the service
/// closes. Also with the FIN arriving while a `/sleep` is pending. Declared
/// `half-close-drops-requests`: the service closes, having answered at most an in-order prefix.
pub fn half_close(bin: &str) {
    let svc = Service::start(bin, &[]);
    let s = &svc.startup;
    let drops = s.has_deviation(deviation::HALF_CLOSE_DROPS_REQUESTS);
    let ping = Reply::for_route(Route::Ping);

    // Many requests, then FIN, in one go (as a load generator ending a run does).
    let mut c = Conn::open(svc.addr());
    let batch: Vec<u8> = (0..HALF_CLOSE_REQUESTS)
        .flat_map(|_| get("/ping", ""))
        .collect();
    c.send_ok(&batch);
    c.shutdown_write();
    let mut answered = 0;
    let end = loop {
        match c.read_response() {
            Ok(r) => {
                assert_canonical(s, &ping, false, &r);
                answered += 1;
            }
            Err(e) => break e,
        }
    };
    assert!(
        end.is_close(),
        "{bin}: after {answered} responses the half-closed connection was not closed: {end:?}"
    );
    if drops {
        assert!(answered <= HALF_CLOSE_REQUESTS, "{answered} responses");
        eprintln!(
            "{bin}: declared half-close-drops-requests: {answered}/{HALF_CLOSE_REQUESTS} answered"
        );
    } else {
        assert_eq!(
            (answered, end),
            (HALF_CLOSE_REQUESTS, NoResponse::Closed { partial: 0 }),
            "{bin}: requests sent before the client's FIN must all be answered, then a close"
        );
    }

    // The FIN arrives while the response is still pending (a /sleep).
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/sleep?ms=200", ""));
    std::thread::sleep(Duration::from_millis(50));
    c.shutdown_write();
    match c.read_response() {
        Ok(r) => assert_canonical(s, &ping, false, &r),
        Err(e) => assert!(drops && e.is_close(), "{bin}: /sleep then FIN: {e:?}"),
    }
    assert!(
        c.closes_within(CLOSE_WAIT),
        "{bin}: not closed after the client's FIN"
    );
}
