//! Endpoint contract: exact bytes of every route, sleep semantics, Date, request bodies.

use std::time::{Duration, Instant};

use ping_common::response::{Reply, Status};
use ping_common::route::Route;

use crate::client::{Conn, get};
use crate::expect::{assert_canonical, check_date};
use crate::service::Service;

fn one(svc: &Service, request: &[u8]) -> crate::client::RawResponse {
    let mut c = Conn::open(svc.addr());
    c.send_ok(request);
    c.expect_response(&String::from_utf8_lossy(request))
}

pub fn ping(bin: &str) {
    let svc = Service::start(bin, &[]);
    let r = one(&svc, &get("/ping", ""));
    assert_canonical(&svc.startup, &Reply::for_route(Route::Ping), false, &r);
    // Query strings do not change the route.
    let r = one(&svc, &get("/ping?x=1", ""));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
}

pub fn json(bin: &str) {
    let svc = Service::start(bin, &[]);
    let r = one(&svc, &get("/json", ""));
    assert_canonical(&svc.startup, &Reply::for_route(Route::Json), false, &r);
    let v: serde_json::Value = serde_json::from_slice(&r.body).expect("JSON body");
    assert_eq!(v, serde_json::json!({"message": "Hello, World!"}));
}

pub fn not_found(bin: &str) {
    let svc = Service::start(bin, &[]);
    for target in ["/", "/pong", "/ping/x", "/json2"] {
        let r = one(&svc, &get(target, ""));
        assert_canonical(&svc.startup, &Reply::empty(Status::NotFound), false, &r);
    }
}

pub fn method_not_allowed(bin: &str) {
    let svc = Service::start(bin, &[]);
    for req in [
        "POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "DELETE /json HTTP/1.1\r\nHost: x\r\n\r\n",
        "PUT /sleep?ms=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    ] {
        let r = one(&svc, req.as_bytes());
        assert_canonical(
            &svc.startup,
            &Reply::empty(Status::MethodNotAllowed),
            false,
            &r,
        );
    }
    // Unknown path wins over a bad method.
    let r = one(
        &svc,
        b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(r.status, 404);
}

pub fn sleep_waits(bin: &str) {
    let svc = Service::start(bin, &[]);
    let r = one(&svc, &get("/sleep?ms=0", ""));
    assert_canonical(
        &svc.startup,
        &Reply::for_route(Route::Sleep { ms: 0 }),
        false,
        &r,
    );
    let t0 = Instant::now();
    let r = one(&svc, &get("/sleep?ms=250", ""));
    let took = t0.elapsed();
    assert_eq!(r.status, 200);
    assert!(
        took >= Duration::from_millis(240),
        "/sleep?ms=250 took {took:?}"
    );
}

pub fn sleep_bad_query(bin: &str) {
    let svc = Service::start(bin, &[]);
    for target in [
        "/sleep",
        "/sleep?ms=",
        "/sleep?ms=abc",
        "/sleep?ms=-1",
        "/sleep?ms=10001",
        "/sleep?ms=1e3",
        "/sleep?time=5",
    ] {
        let r = one(&svc, &get(target, ""));
        assert_canonical(&svc.startup, &Reply::empty(Status::BadRequest), false, &r);
    }
}

/// `Date` is a valid, current RFC 7231 date and advances with time.
pub fn date_advances(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    let first = c.expect_response("/ping");
    let t1 = check_date(first.header("Date").expect("Date"));
    // Asked again every 100 ms until it moves: within 1.6 s, as may_minihttp refreshes its
    // Date every 500 ms (a fixed 1.6 s wait cost every service that much).
    let deadline = std::time::Instant::now() + Duration::from_millis(1_600);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        c.send_ok(&get("/ping", ""));
        let next = c.expect_response("/ping");
        let t2 = check_date(next.header("Date").expect("Date"));
        if t2 > t1 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Date did not advance in 1.6 s: {t1:?} then {t2:?}"
        );
    }
}

/// A request body (Content-Length) is consumed, not parsed as the next request.
pub fn request_body_is_skipped(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut c = Conn::open(svc.addr());
    let mut req =
        b"POST /ping HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world".to_vec();
    req.extend_from_slice(&get("/ping", ""));
    c.send_ok(&req);
    assert_eq!(c.expect_response("POST").status, 405);
    let r = c.expect_response("GET after body");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]));
}
