//! Exact accounting against in-test servers: request counts, pipelining, keep-alive vs
//! connection-per-request, status/body validation, chunked bodies.

use loadgen::IoChoice;

use crate::support::{Mode, TestServer, assert_adds_up, closed_on, on_every_backend, open};

fn exact_counts_for_n_requests(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 4, 1);
    spec.requests = Some(1000);
    spec.threads = 2;
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!((r.counts.sent, r.counts.ok), (1000, 1000), "{:?}", r.counts);
    assert_eq!(srv.requests(), 1000);
    assert_eq!(r.latency_us.samples, 1000);
    assert_eq!(r.connections.established, 4);
    assert_eq!(r.status_counts.get(&200), Some(&1000));
    assert!(r.requests_per_s > 0.0 && r.window_s > 0.0);
}

fn pipelined_counts_with_partial_last_batch(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 3, 16);
    spec.requests = Some(1001);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!((r.counts.sent, r.counts.ok), (1001, 1001), "{:?}", r.counts);
    assert_eq!(srv.requests(), 1001);
}

fn keepalive_reuses_connections_and_close_opens_one_per_request(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 2, 1);
    spec.requests = Some(200);
    let r = loadgen::run(&spec).unwrap();
    assert_eq!(r.counts.ok, 200);
    assert_eq!(srv.accepted(), 2);

    let srv = TestServer::start(Mode::Ok);
    spec.url = srv.url();
    spec.keepalive = false;
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.ok, 200, "{:?}", r.counts);
    // The client closes after each response even though this server would keep going.
    assert!(srv.accepted() >= 200, "accepted {}", srv.accepted());
    assert!(r.connections.established >= 200);
}

fn server_closing_each_connection_is_followed(io: IoChoice) {
    let srv = TestServer::start(Mode::CloseEach);
    let mut spec = closed_on(io, srv.url(), 2, 1);
    spec.requests = Some(100);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.ok, 100, "{:?}", r.counts);
    assert!(r.connections.reconnected >= 98);
}

fn wrong_status_and_body_are_errors(io: IoChoice) {
    let srv = TestServer::start(Mode::Status(202));
    let mut spec = closed_on(io, srv.url(), 1, 1);
    spec.requests = Some(50);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.errors.status_mismatch, 50);
    assert_eq!(r.ok_per_s, 0.0);

    let srv = TestServer::start(Mode::Status(503));
    spec.url = srv.url();
    let r = loadgen::run(&spec).unwrap();
    assert_eq!(r.counts.non_2xx, 50);

    let srv = TestServer::start(Mode::Ok);
    spec.url = srv.url();
    spec.expect_body_bytes = Some(5);
    let r = loadgen::run(&spec).unwrap();
    assert_eq!(r.counts.errors.body_mismatch, 50);
    spec.expect_body_bytes = Some(4);
    let r = loadgen::run(&spec).unwrap();
    assert_eq!(r.counts.ok, 50);
}

fn chunked_bodies_are_framed(io: IoChoice) {
    let srv = TestServer::start(Mode::Chunked);
    let mut spec = closed_on(io, srv.url(), 2, 4);
    spec.requests = Some(400);
    spec.expect_body_bytes = Some(7);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.ok, 400, "{:?}", r.counts);
}

fn duration_run_with_warmup_reports_a_timeline(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed_on(io, srv.url(), 4, 1);
    spec.duration_ms = Some(600);
    spec.warmup_ms = 200;
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!((r.window_s - 0.6).abs() < 0.05, "window {}", r.window_s);
    assert!(r.counts.ok > 100);
    // Warm-up requests reached the server but are not in the report.
    assert!(srv.requests() > r.counts.sent);
    assert_eq!(r.timeline.len(), 1);
    assert_eq!(
        r.timeline.iter().map(|i| i.responses).sum::<u64>(),
        r.latency_us.samples
    );
}

#[test]
fn open_loop_with_a_request_count_sends_exactly_that_many() {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = open(srv.url(), 2000.0, 4);
    spec.threads = 2;
    spec.requests = Some(300);
    spec.warmup_ms = 50;
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!((r.counts.sent, r.counts.ok), (300, 300), "{:?}", r.counts);
    assert_eq!(r.counts.backlog_at_end, 0);
    // 300 requests at 2000/s take ~150 ms; warm-up requests went out before them.
    assert!(
        r.window_s > 0.1 && r.window_s < 1.0,
        "window {}",
        r.window_s
    );
    assert_eq!(srv.requests(), 400);
    let lag = r.send_lag_us.unwrap();
    assert_eq!(lag.samples, 300);
    // Each unqueued send's lag is split in two: woken late + its own.
    let (sched, wake, own) = (
        r.schedule_lag_us.unwrap(),
        r.wake_lag_us.unwrap(),
        r.own_lag_us.unwrap(),
    );
    assert_eq!((wake.samples, own.samples), (sched.samples, sched.samples));
    // Neither part exceeds the whole (HDR buckets: within 0.1 %, + 1 µs of rounding).
    assert!(
        wake.max <= sched.max + sched.max / 1000 + 1,
        "{wake:?} vs {sched:?}"
    );
    assert!(
        own.max <= sched.max + sched.max / 1000 + 1,
        "{own:?} vs {sched:?}"
    );
    let h = r.open_loop_hdr_v2_b64.unwrap();
    assert!(h.wake_lag.is_some() && h.own_lag.is_some());
}

#[test]
fn open_loop_coalescing_shares_wake_ups_and_records_the_lateness() {
    let srv = TestServer::start(Mode::Ok);
    // 5,000/s is one send every 200 µs: a 1 ms slack groups ~5 sends per wake-up, the earlier
    // ones up to 1 ms late by choice. 32 connections, so a server stalled for a moment (it
    // runs in this process) leaves the sends free ones: a generator with queued sends waits
    // for I/O, one wake-up per response.
    let mut spec = open(srv.url(), 5_000.0, 32);
    spec.duration_ms = Some(300);
    spec.warmup_ms = 20;
    if let loadgen::LoadModel::Open { coalesce_us, .. } = &mut spec.model {
        *coalesce_us = 1_000;
    }
    // A quiet machine reads ~0.17 wake-ups/request in every run; a fresh clone's CI (the
    // browser test beside it) read 0.57, then 0.46 with 32 connections, in its one run, as
    // the spin-wait test once saw 0.58: sharing must show in one of several runs, the
    // lateness in each. Without coalescing, every run reads ~1.0 (checked by hand).
    let mut seen = Vec::new();
    for _ in 0..RUNS {
        let r = loadgen::run(&spec).unwrap();
        assert_adds_up(&r);
        // Their lateness is recorded, not hidden: the mean deliberate lag is ~400 µs.
        let lag = r.schedule_lag_us.unwrap();
        assert!(lag.p50 >= 200, "send lag {lag:?}");
        assert!(lag.p99 >= 800, "send lag {lag:?}");
        // ...and the verdict says where it came from once it passes the limit.
        for reason in r.verdict.reasons.iter().filter(|r| r.contains("send-lag")) {
            assert!(reason.contains("--coalesce-us 1000"), "{reason}");
        }
        // A wake-up sends at least the sends due within 1 ms of its first (late wake-ups
        // only gather more), so well under one wake-up per request.
        let wakeups = r.generator.wakeups_per_request;
        assert!(wakeups > 0.0, "no wake-up counted: {:?}", r.generator);
        if wakeups <= 0.35 {
            return;
        }
        seen.push(format!(
            "{wakeups:.3} (queued {} of {})",
            r.counts.queued, r.counts.sent
        ));
    }
    panic!("wake-ups/request over 0.35 in all {RUNS} runs: {seen:?}");
}

#[test]
fn open_loop_spin_waits_are_measured_and_kept_out_of_the_verdict() {
    let srv = TestServer::start(Mode::Ok);
    // 30 µs apart: a wake-up ~20 µs late leaves under 10 µs until the next send is due (too
    // far apart to share a wake-up at the default 20 µs coalescing): a spin-wait. 16
    // connections, so a server slowed by a busy machine (it runs in this process) still
    // leaves one free for every send: with 2, sends queued for a connection whenever a
    // response took over 60 µs, and a thread waiting for a connection never spins (one gate
    // run saw no spin in 12 tries that way).
    let mut spec = open(srv.url(), 33_000.0, 16);
    spec.duration_ms = Some(300);
    spec.warmup_ms = 50;
    // A thread starved of CPU (parallel tests on a 2-core CI box), or woken late by a VM whose
    // wake-ups cost tens of µs at that moment, is late for every send and so never
    // spin-waits; spinning must show in one of several runs, every other check in each.
    let mut spun = None;
    for _ in 0..RUNS {
        let r = loadgen::run(&spec).unwrap();
        assert_adds_up(&r);
        let g = &r.generator;
        assert_eq!(g.per_thread_spin_wait.len(), g.threads as usize);
        for (spin, busy) in g.per_thread_spin_wait.iter().zip(&g.per_thread_busy) {
            // Spinning is CPU time, so it cannot exceed the thread's busy share (+ clock noise).
            assert!(*spin <= busy + 0.05, "spin {spin} > busy {busy}");
        }
        for reason in &r.verdict.reasons {
            assert!(!reason.contains("% busy (limit"), "old busy rule: {reason}");
        }
        let all_spun = g.per_thread_spin_wait.iter().all(|s| *s > 0.0);
        spun = Some(format!(
            "queued {} of {} sent; {g:?}",
            r.counts.queued, r.counts.sent
        ));
        if all_spun {
            return;
        }
    }
    panic!("no spin-wait measured at 33k req/s in {RUNS} runs: {spun:?}");
}

/// Tries of the spin-wait test: with 5, one serial run here saw none (0.58 wake-ups per
/// request), then 6 of 6 passed alone.
const RUNS: usize = 12;

fn bodies_larger_than_the_read_buffer_are_skipped_correctly(io: IoChoice) {
    let srv = TestServer::start(Mode::Big(100_000));
    let mut spec = closed_on(io, srv.url(), 2, 2);
    spec.requests = Some(100);
    spec.expect_body_bytes = Some(100_000);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(r.counts.ok, 100, "{:?}", r.counts);
    assert!(r.bytes_read >= 100 * 100_000);
}

#[test]
fn open_loop_window_is_the_duration_not_the_last_send() {
    let srv = TestServer::start(Mode::Ok);
    // Sends at 0, 0.5 s and 1.0 s; the window still runs to 1.5 s.
    let mut spec = open(srv.url(), 2.0, 2);
    spec.duration_ms = Some(1500);
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!((r.window_s - 1.5).abs() < 0.05, "window {}", r.window_s);
    assert!((r.requests_per_s - 2.0).abs() < 0.1, "{}", r.requests_per_s);
    // One request in 500 ms is 2 req/s, however fast the answer came.
    let mut spec = open(srv.url(), 0.001, 1);
    spec.duration_ms = Some(500);
    let r = loadgen::run(&spec).unwrap();
    assert!((r.window_s - 0.5).abs() < 0.05, "window {}", r.window_s);
    assert!(r.requests_per_s <= 2.0 + 1e-9, "{}", r.requests_per_s);
}

#[test]
fn open_loop_request_count_window_spans_the_schedule() {
    let srv = TestServer::start(Mode::Ok);
    // 3 requests at 4/s are due at 0, 0.25 and 0.5 s: the schedule spans 0.75 s.
    let mut spec = open(srv.url(), 4.0, 1);
    spec.requests = Some(3);
    let r = loadgen::run(&spec).unwrap();
    assert_eq!(r.counts.ok, 3);
    assert!((r.requests_per_s - 4.0).abs() < 0.2, "{}", r.requests_per_s);
}

fn busy_shares_never_exceed_one(io: IoChoice) {
    let srv = TestServer::start(Mode::Ok);
    for n in [1, 3, 10, 100] {
        let mut spec = closed_on(io, srv.url(), 1, 1);
        spec.requests = Some(n);
        let r = loadgen::run(&spec).unwrap();
        let g = &r.generator;
        assert!(g.busiest_thread_busy <= 1.0, "n={n}: {g:?}");
        assert!(g.per_thread_busy.iter().all(|b| *b <= 1.0), "n={n}: {g:?}");
    }
}

on_every_backend!(
    exact_counts_for_n_requests,
    pipelined_counts_with_partial_last_batch,
    keepalive_reuses_connections_and_close_opens_one_per_request,
    server_closing_each_connection_is_followed,
    wrong_status_and_body_are_errors,
    chunked_bodies_are_framed,
    duration_run_with_warmup_reports_a_timeline,
    bodies_larger_than_the_read_buffer_are_skipped_correctly,
    busy_shares_never_exceed_one,
);
