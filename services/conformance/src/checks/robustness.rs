//! Bad input never crashes or hangs a service: garbage, oversized heads, many headers.

use std::time::Duration;

use ping_common::response::{Reply, Status};
use ping_common::route::Route;
use ping_common::startup::{StartupLine, deviation};

use crate::client::{Conn, NoResponse, RawResponse, get};
use crate::expect::assert_canonical;
use crate::expect::extra_deviation::HEAD_LIMIT_128K;
use crate::service::Service;

/// After abuse the service must still be up and answering on a fresh connection.
fn still_serves(svc: &mut Service) {
    svc.assert_alive();
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping after abuse").status, 200);
}

/// A library- or service-made error response: the status must be `want`; its bytes must be
/// canonical unless the service declared that its library writes its own error responses.
fn check_error_response(s: &StartupLine, want: Status, r: &RawResponse) {
    assert_eq!(
        r.status,
        want.code(),
        "{}",
        String::from_utf8_lossy(&r.bytes)
    );
    if !s.has_deviation(deviation::LIBRARY_ERROR_RESPONSES) {
        assert_canonical(s, &Reply::empty(want), false, r);
    }
}

/// Either an error response with status `want`, or a close.
fn expect_error_or_close(s: &StartupLine, c: &mut Conn, want: Status) {
    match c.read_response() {
        Ok(r) => check_error_response(s, want, &r),
        Err(e) => assert!(e.is_close(), "neither {want:?} nor close: {e:?}"),
    }
}

pub fn garbage(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    for junk in [
        &b"\x00\x01\x02garbage\r\n\r\n"[..],
        b"GET /ping HTTP/9.9\r\n\r\n",
        b"GET  HTTP/1.1\r\n\r\n",
        b"GET /ping HTTP/1.1\r\nNo colon here\r\n\r\n",
        b"\r\n\r\n\r\n\r\nHELLO\r\n\r\n",
    ] {
        let mut c = Conn::open(svc.addr());
        c.send(junk);
        expect_error_or_close(&svc.startup, &mut c, Status::BadRequest);
    }
    // Half a request, then the client goes away.
    let mut c = Conn::open(svc.addr());
    c.send_ok(b"GET /pi");
    drop(c);
    still_serves(&mut svc);
}

/// A valid request then garbage in one segment: the valid one is answered first (unless the
/// service declared that a bad request drops the batch: then a close or the 400 alone), then
/// 400 or close.
pub fn garbage_after_valid(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    let mut req = get("/ping", "");
    req.extend_from_slice(b"\x00\x01garbage\r\n\r\n");
    c.send_ok(&req);
    let s = svc.startup.clone();
    match c.read_response() {
        Ok(r) if r.status == 200 => {
            assert_eq!(r.body, b"pong");
            expect_error_or_close(&s, &mut c, Status::BadRequest);
        }
        // Declared: the batch's earlier responses are dropped and the garbage answered.
        Ok(r) if s.has_deviation(deviation::PIPELINE_ERROR_DROPS_BATCH) => {
            check_error_response(&s, Status::BadRequest, &r);
        }
        Ok(r) => panic!("first response should be the pong: {r:?}"),
        Err(e) => {
            assert!(
                s.has_deviation(deviation::PIPELINE_ERROR_DROPS_BATCH),
                "valid request not answered before the garbage: {e:?}"
            );
            assert!(e.is_close(), "{e:?}");
        }
    }
    still_serves(&mut svc);
}

/// A complete head over 64 KiB → 431 or close (if declared: served up to 128 KiB, refused
/// over it).
pub fn oversized_head(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    let big = "a".repeat(70 * 1024);
    let mut c = Conn::open(svc.addr());
    c.send(&get("/ping", &format!("X-Big: {big}\r\n")));
    if svc.startup.has_deviation(HEAD_LIMIT_128K) {
        let r = c.expect_response("declared: a 70 KiB head is served");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
        let bigger = "a".repeat(140 * 1024);
        let mut c = Conn::open(svc.addr());
        c.send(&get("/ping", &format!("X-Big: {bigger}\r\n")));
        expect_error_or_close(&svc.startup, &mut c, Status::HeadersTooLarge);
    } else {
        expect_error_or_close(&svc.startup, &mut c, Status::HeadersTooLarge);
    }
    still_serves(&mut svc);
}

/// A head that never ends: closed once over the limit, unless the service declared that it
/// buffers without limit (then the connection stays open and the service keeps serving).
pub fn unterminated_head(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    // One header whose value never ends (many lines would hit header-count limits instead).
    c.send_ok(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Fill: ");
    let chunk = "b".repeat(1024);
    let mut sent_ok = true;
    for _ in 0..1024 {
        if !c.send(chunk.as_bytes()) {
            sent_ok = false;
            break;
        }
    }
    if svc.startup.has_deviation(deviation::NO_HEAD_SIZE_CAP) {
        assert!(sent_ok, "declared no cap, but the 1 MiB head was refused");
        let got = c.read_response_within(Duration::from_millis(400));
        assert!(
            matches!(got, Err(NoResponse::TimedOut)),
            "declared no cap: no response and the connection open, got {got:?}"
        );
    } else if sent_ok {
        expect_error_or_close(&svc.startup, &mut c, Status::HeadersTooLarge);
    }
    drop(c);
    still_serves(&mut svc);
}

/// Up to 64 request headers are accepted (16 if declared, and a 17th then closes).
pub fn many_headers(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    let s = svc.startup.clone();
    let limit = if s.has_deviation(deviation::MAX_HEADERS_16) {
        16
    } else {
        ping_common::MAX_HEADERS
    };
    let headers = |n: usize| -> String {
        // `get` adds Host: n - 1 more.
        (1..n).map(|i| format!("X-H{i}: v{i}\r\n")).collect()
    };
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", &headers(limit)));
    let r = c.expect_response("many headers");
    assert_canonical(&s, &Reply::for_route(Route::Ping), false, &r);
    if s.has_deviation(deviation::MAX_HEADERS_16) {
        let mut c = Conn::open(svc.addr());
        c.send_ok(&get("/ping", &headers(17)));
        let e = c
            .read_response()
            .expect_err("declared: 17 headers get no response");
        assert!(e.is_close(), "declared: closed, got {e:?}");
    }
    still_serves(&mut svc);
}
