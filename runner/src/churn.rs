//! Connection churn, run by the runner itself (not loadgen): `cycles` rounds of opening
//! `connections` connections to the service — each sends one request and reads a complete
//! 200, so the service really accepted and served it — holding them all, closing them all,
//! and reading the service's VmRSS once it settles. A service that keeps per-connection
//! memory after the connection is gone shows RSS rising round after round.
//!
//! After closing, RSS is read only once the service's open descriptors are back at their
//! count before the round (it has processed every close; reading sooner can find the
//! connections' memory still held), then once two reads agree.
//!
//! Every loop is bounded: connections per round, a deadline per round (connections not
//! attempted by then count as failed), and the settle waits. A repetition that ends early
//! (the service exits, an interrupt) keeps its finished rounds.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::interrupt;
use crate::process::Proc;
use crate::results::churn::{ChurnCycle, ChurnRep, ChurnSpec};
use crate::sample;
use crate::service::http::{self, Stream};

/// How often RSS is read while the service settles.
pub const SETTLE_POLL_MS: u64 = 20;
/// The longest settle wait after opening or closing: RSS is read then, changing or not.
pub const SETTLE_MAX_MS: u64 = 300;
/// The longest wait after closing for the service's descriptor count to return.
pub const FD_SETTLE_MAX_MS: u64 = 2000;
/// A round that has not opened its connections by then gives up on the rest (counted as
/// failed): a hung service must not hold the run for connections × request timeout.
pub const CYCLE_DEADLINE: Duration = Duration::from_secs(30);
/// Estimated cost of one connection (connect, one request, close) on loopback, for the plan
/// (measured: 1,000 connections open in 100–150 ms on the 2-core dev VM).
pub const EST_US_PER_CONNECTION: u64 = 110;
/// Estimated settle wait (after opening, and after closing), for the plan.
pub const EST_SETTLE_MS: u64 = 50;

/// The estimated wall time of one churn repetition's cycles (without start and stop).
pub fn estimate_ms(spec: &ChurnSpec) -> u64 {
    let per_cycle = u64::from(spec.connections) * EST_US_PER_CONNECTION / 1000 + 2 * EST_SETTLE_MS;
    per_cycle * u64::from(spec.cycles)
}

/// Runs the cycles against the service `proc` listening on `addr`. When interrupted or when
/// the service exits, `partial` says why and `cycles` holds the rounds finished before.
pub fn run(
    proc: &mut Proc,
    addr: SocketAddr,
    path: &str,
    spec: &ChurnSpec,
    timeout: Duration,
    rep: u32,
) -> ChurnRep {
    let mut r = ChurnRep {
        rep,
        started_unix_ms: sample::now_unix_us() / 1000,
        rss_before_bytes: rss(proc.pid),
        cycles: Vec::with_capacity(spec.cycles as usize),
        partial: None,
    };
    let request = http::request(path, addr, "churn");
    for cycle in 1..=spec.cycles {
        if interrupt::requested() {
            r.partial = Some("interrupted".into());
            break;
        }
        let c = one_cycle(proc.pid, addr, &request, spec, timeout, cycle);
        if let Some(st) = proc.try_wait() {
            r.partial = Some(format!(
                "service exited during churn cycle {cycle} with {st} ({} of {} connections \
                 failed)",
                c.failed, c.opened
            ));
            break;
        }
        r.cycles.push(c);
    }
    r
}

fn one_cycle(
    pid: u32,
    addr: SocketAddr,
    request: &[u8],
    spec: &ChurnSpec,
    timeout: Duration,
    cycle: u32,
) -> ChurnCycle {
    let fds_idle = fd_count(pid);
    let t0 = Instant::now();
    let mut open = Vec::with_capacity(spec.connections as usize);
    let mut failed = 0u32;
    for _ in 0..spec.connections {
        let left = CYCLE_DEADLINE.saturating_sub(t0.elapsed());
        if left.is_zero() || interrupt::requested() {
            failed += 1;
            continue;
        }
        match serve_one(addr, request, timeout.min(left)) {
            Ok(s) => open.push(s),
            Err(_) => failed += 1,
        }
    }
    let open_ms = t0.elapsed().as_millis() as u64;
    let served = open.len() as u32;
    let rss_open_bytes = settle(pid);
    drop(open);
    let t1 = Instant::now();
    let fd_settle_ms = fds_back(pid, fds_idle);
    let rss_closed_bytes = settle(pid);
    ChurnCycle {
        cycle,
        opened: spec.connections,
        served,
        failed,
        rss_open_bytes,
        rss_closed_bytes,
        settle_ms: t1.elapsed().as_millis() as u64,
        fds_idle,
        fd_settle_ms,
        open_ms,
    }
}

/// How many descriptors `pid` has open.
fn fd_count(pid: u32) -> Option<u32> {
    let d = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(d.count() as u32)
}

/// Milliseconds until `pid`'s descriptor count is back at `idle` or below, polled every
/// 5 ms; None if not within [`FD_SETTLE_MAX_MS`] (or unreadable).
fn fds_back(pid: u32, idle: Option<u32>) -> Option<u64> {
    let idle = idle?;
    let t0 = Instant::now();
    loop {
        if fd_count(pid)? <= idle {
            return Some(t0.elapsed().as_millis() as u64);
        }
        if t0.elapsed() >= Duration::from_millis(FD_SETTLE_MAX_MS) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn rss(pid: u32) -> Option<u64> {
    sample::status(pid).map(|s| s.0)
}

/// VmRSS once two reads `SETTLE_POLL_MS` apart agree, or after `SETTLE_MAX_MS`.
fn settle(pid: u32) -> Option<u64> {
    let t0 = Instant::now();
    let mut last = rss(pid);
    loop {
        std::thread::sleep(Duration::from_millis(SETTLE_POLL_MS));
        let now = rss(pid);
        if now == last || t0.elapsed() >= Duration::from_millis(SETTLE_MAX_MS) {
            return now;
        }
        last = now;
    }
}

/// Connects, sends one request and reads one complete 200 response (the runner's one HTTP/1.1
/// client, `service::http`); the connection is returned open.
fn serve_one(addr: SocketAddr, request: &[u8], timeout: Duration) -> Result<Stream, String> {
    let mut s = http::connect(addr, timeout, false)?;
    let _ = s.tcp().set_nodelay(true);
    let r = http::exchange(&mut s, request, Instant::now())?;
    if r.status != 200 {
        return Err(format!("status {}", r.status));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    #[test]
    fn serve_one_reads_a_whole_200_and_keeps_the_connection() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut out = Vec::new();
            for body in ["pong", "no"] {
                let (mut c, _) = l.accept().unwrap();
                let mut b = [0u8; 512];
                let _ = c.read(&mut b).unwrap();
                let status = if body == "pong" {
                    "200 OK"
                } else {
                    "404 Not Found"
                };
                // Head and body in two writes: the reader must wait for the body.
                c.write_all(format!("HTTP/1.1 {status}\r\nContent-Length: 4\r\n\r\n").as_bytes())
                    .unwrap();
                std::thread::sleep(Duration::from_millis(20));
                c.write_all(b"pong").unwrap();
                out.push(c);
            }
            out
        });
        let req = b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n";
        let s = serve_one(addr, req, Duration::from_secs(2)).unwrap();
        assert!(s.tcp().peer_addr().is_ok());
        let Err(e) = serve_one(addr, req, Duration::from_secs(2)) else {
            panic!("a 404 taken for a served connection");
        };
        assert!(e.contains("404"), "{e}");
        drop(t.join().unwrap());
    }

    #[test]
    fn estimate_grows_with_connections_and_cycles() {
        let a = estimate_ms(&ChurnSpec {
            connections: 1000,
            cycles: 5,
        });
        let b = estimate_ms(&ChurnSpec {
            connections: 2000,
            cycles: 10,
        });
        assert!(a > 0 && b > 2 * a, "{a} {b}");
    }
}
