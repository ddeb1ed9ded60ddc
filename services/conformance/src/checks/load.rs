//! Concurrency contract: 1,000 connections at once; sleeping does not block a worker.

use std::time::{Duration, Instant};

use crate::client::{Conn, get};
use crate::service::Service;

/// 1,000 connections open at the same time, each answered.
pub fn concurrent_1000(bin: &str) {
    let svc = Service::start(bin, &[]);
    let mut conns: Vec<Conn> = (0..1000).map(|_| Conn::open(svc.addr())).collect();
    for c in &mut conns {
        c.send_ok(&get("/ping", ""));
    }
    for (i, c) in conns.iter_mut().enumerate() {
        let r = c.expect_response(&format!("connection #{i}"));
        assert_eq!((r.status, r.body.as_slice()), (200, &b"pong"[..]), "#{i}");
    }
    // All still open and usable.
    for c in conns.iter_mut().step_by(50) {
        c.send_ok(&get("/json", ""));
        assert_eq!(c.expect_response("second round").status, 200);
    }
}

/// 50 concurrent `/sleep?ms=300` on one worker finish together, not one after another.
pub fn sleep_does_not_block(bin: &str) {
    let svc = Service::start(bin, &["--workers", "1"]);
    let mut conns: Vec<Conn> = (0..50).map(|_| Conn::open(svc.addr())).collect();
    let t0 = Instant::now();
    for c in &mut conns {
        c.send_ok(&get("/sleep?ms=300", ""));
    }
    for c in &mut conns {
        assert_eq!(c.expect_response("/sleep").status, 200);
    }
    let took = t0.elapsed();
    assert!(
        took < Duration::from_millis(1_500),
        "50 × 300 ms sleeps took {took:?} on one worker: sleep blocks"
    );
    assert!(
        took >= Duration::from_millis(290),
        "finished too early: {took:?}"
    );
}
