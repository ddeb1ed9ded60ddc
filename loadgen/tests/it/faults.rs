//! Failure modes: silent servers (timeouts), a one-time stall seen by the open loop but not
//! by closed-loop service time, refused connections, and a server dying mid-run.

use std::time::{Duration, Instant};

use loadgen::IoChoice;

use crate::support::{
    Mode, TestServer, assert_adds_up, closed_on, on_every_backend, open, run_killing_server,
};

fn silent_server_produces_timeouts_not_silence(io: IoChoice) {
    let srv = TestServer::start(Mode::Silent);
    let mut spec = closed_on(io, srv.url(), 2, 1);
    spec.requests = Some(4);
    spec.timeout_ms = 150;
    let t = Instant::now();
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.timeouts, 4, "{:?}", r.counts);
    assert_eq!(r.counts.ok, 0);
    // Each timeout closes and reopens its connection.
    assert!(r.connections.reconnected >= 2, "{:?}", r.connections);
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(r.problems.iter().any(|p| p.contains("timed out")));
}

fn timeouts_in_a_duration_run_are_counted_once(io: IoChoice) {
    let srv = TestServer::start(Mode::Silent);
    let mut spec = closed_on(io, srv.url(), 2, 4);
    spec.duration_ms = Some(500);
    spec.timeout_ms = 100;
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    // ~4 rounds of 2 connections x 4 requests time out; the rest are in flight at the end.
    assert!(
        r.counts.timeouts >= 16 && r.counts.timeouts <= 40,
        "{:?}",
        r.counts
    );
    assert_eq!(r.counts.timeouts % 4, 0);
}

#[test]
fn open_loop_sees_a_stall_that_closed_loop_service_time_hides() {
    // The whole server freezes for 500 ms once.
    let srv = TestServer::start(Mode::StallOnce {
        after: 200,
        ms: 500,
    });
    let mut spec = open(srv.url(), 1000.0, 16);
    spec.duration_ms = Some(1000);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!(
        r.latency_us.p99 >= 250_000,
        "open-loop p99 {} µs should show the 500 ms stall",
        r.latency_us.p99
    );
    assert!(
        r.counts.queued > 0,
        "requests should have queued during the stall"
    );
    assert!(r.service_time_us.p50 < 100_000);
    let lag = r.send_lag_us.as_ref().unwrap();
    assert!(lag.samples == r.counts.sent);
}

/// The closed-loop half of the test above, on each backend.
fn closed_loop_service_time_hides_a_stall(io: IoChoice) {
    let srv = TestServer::start(Mode::StallOnce {
        after: 200,
        ms: 500,
    });
    let mut spec = closed_on(io, srv.url(), 2, 1);
    spec.duration_ms = Some(1000);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!(r.counts.ok > 1000, "{:?}", r.counts);
    assert!(
        r.latency_us.p99 < 250_000,
        "closed-loop service-time p99 {} µs hides the stall",
        r.latency_us.p99
    );
    assert!(
        r.latency_us.max >= 400_000,
        "but the max shows it: {}",
        r.latency_us.max
    );
}

fn refused_connections_end_the_run_with_a_report(io: IoChoice) {
    // Bind and drop to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut spec = closed_on(io, format!("http://127.0.0.1:{port}/"), 4, 1);
    spec.duration_ms = Some(5000);
    let t = Instant::now();
    let r = loadgen::run(&spec).unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "must not wait out the duration"
    );
    assert_adds_up(&r);
    assert_eq!(r.connections.established, 0);
    assert!(r.connections.failed >= 4);
    assert_eq!(r.counts.ok, 0);
    assert!(
        r.problems.iter().any(|p| p.contains("refused")),
        "{:?}",
        r.problems
    );
}

fn server_killed_mid_run_ends_on_time_with_complete_accounting(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 4, 1);
    spec.duration_ms = Some(800);
    let (r, elapsed) = run_killing_server(srv, &spec, 300);
    assert!(elapsed < Duration::from_millis(2000), "took {:?}", elapsed);
    assert_adds_up(&r);
    assert!(r.counts.ok > 0);
    assert!((r.window_s - 0.8).abs() < 0.1, "window {}", r.window_s);
    assert!(
        r.connections.failed > 0,
        "reconnects to a dead server fail: {:?}",
        r.connections
    );
    // Later seconds of the timeline show the outage.
    assert_eq!(r.timeline.len(), 1);
}

fn server_killed_in_a_requests_run_stops_instead_of_hanging(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 2, 1);
    spec.requests = Some(u32::MAX as u64);
    spec.timeout_ms = 200;
    let (r, elapsed) = run_killing_server(srv, &spec, 200);
    assert!(elapsed < Duration::from_secs(4), "took {:?}", elapsed);
    assert_adds_up(&r);
    assert!(
        r.problems.iter().any(|p| p.contains("unreachable")),
        "{:?}",
        r.problems
    );
}

#[test]
fn open_loop_schedule_is_sub_millisecond() {
    // With millisecond timers (wrk2, tokio) the median lateness would be ~0.5-1 ms.
    let srv = TestServer::start(Mode::Ok);
    let mut spec = open(srv.url(), 2000.0, 8);
    spec.duration_ms = Some(400);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    let lag = r.schedule_lag_us.expect("open loop reports schedule lag");
    assert!(lag.samples > 500, "{lag:?}");
    assert!(lag.p50 < 400, "schedule lag p50 {} µs", lag.p50);
}

#[test]
fn open_loop_survives_the_server_dying_and_counts_the_backlog() {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = open(srv.url(), 1000.0, 4);
    spec.duration_ms = Some(700);
    let (r, elapsed) = run_killing_server(srv, &spec, 250);
    assert!(elapsed < Duration::from_millis(2000), "took {:?}", elapsed);
    assert_adds_up(&r);
    assert!(r.counts.ok > 100, "{:?}", r.counts);
    // Nothing scheduled disappears: what could not be sent is backlog.
    assert!(r.counts.backlog_at_end > 100, "{:?}", r.counts);
    assert!(
        r.counts.sent + r.counts.backlog_at_end >= 650,
        "{:?}",
        r.counts
    );
}

fn many_connections_to_a_server_that_never_accepts_end_within_the_grace(io: IoChoice) {
    // A listener nobody accepts from: its backlog fills, later SYNs are dropped.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/ping", listener.local_addr().unwrap());
    let mut spec = closed_on(io, url, 1000, 1);
    spec.duration_ms = Some(300);
    spec.timeout_ms = 300;
    let t = Instant::now();
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    // Pre-connect is bounded by the timeout, the window by the duration; 1 s for the rest.
    assert!(
        t.elapsed() < Duration::from_millis(300 + 300 + 1000),
        "{:?}",
        t.elapsed()
    );
}

on_every_backend!(
    closed_loop_service_time_hides_a_stall,
    silent_server_produces_timeouts_not_silence,
    timeouts_in_a_duration_run_are_counted_once,
    refused_connections_end_the_run_with_a_report,
    server_killed_mid_run_ends_on_time_with_complete_accounting,
    server_killed_in_a_requests_run_stops_instead_of_hanging,
    many_connections_to_a_server_that_never_accepts_end_within_the_grace,
);
