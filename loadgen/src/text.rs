//! The human view of a `Report`: a wrk-like summary. Everything here is derived from the
//! report, so the text and the JSON can never disagree.

use std::fmt::Write;

use crate::report::{IoBackend, Percentiles, Receive, Report};
use crate::spec::{DEFAULT_COALESCE_US, LoadModel, LoadSpec};

/// One line describing the load, e.g. for progress output.
pub fn headline(spec: &LoadSpec) -> String {
    let model = match spec.model {
        LoadModel::Closed {
            connections,
            pipeline,
        } if spec.protocol.is_h2() => {
            let p = spec.protocol.name();
            format!("{p}, closed loop, {connections} connections × {pipeline} streams")
        }
        LoadModel::Closed {
            connections,
            pipeline,
        } => format!("closed loop, {connections} connections, pipeline {pipeline}"),
        LoadModel::Open {
            rate_per_s,
            connections,
            coalesce_us,
        } => {
            let coalescing = if coalesce_us == DEFAULT_COALESCE_US {
                String::new()
            } else {
                format!(", sends within {coalesce_us} µs sharing a wake-up")
            };
            let h2 = if spec.protocol.is_http11() {
                String::new()
            } else {
                format!("{}, ", spec.protocol.name())
            };
            format!(
                "{h2}open loop, {rate_per_s} req/s over up to {connections} connections{coalescing}"
            )
        }
    };
    let bound = match (spec.duration_ms, spec.requests) {
        (Some(d), Some(n)) => format!("{:.2} s or {n} requests", d as f64 / 1e3),
        (Some(d), None) => format!("{:.2} s", d as f64 / 1e3),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => "unbounded".into(),
    };
    format!(
        "{} — {model}, {} thread(s), {}, {bound} (warm-up {} ms)",
        spec.url,
        spec.threads,
        if spec.keepalive {
            "keep-alive"
        } else {
            "connection per request"
        },
        spec.warmup_ms
    )
}

fn us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.2}ms", v / 1e3)
    } else {
        format!("{v:.0}µs")
    }
}

fn line(out: &mut String, label: &str, p: &Percentiles) {
    let _ = writeln!(
        out,
        "  {label:<13} mean {:>8} stdev {:>8} | p50 {:>8} p90 {:>8} p99 {:>8} p99.9 {:>8} max {:>8}",
        us(p.mean),
        us(p.stdev),
        us(p.p50 as f64),
        us(p.p90 as f64),
        us(p.p99 as f64),
        us(p.p999 as f64),
        us(p.max as f64)
    );
}

pub fn summary(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "loadgen {}: {}", r.loadgen_version, headline(&r.spec));
    let open = matches!(r.spec.model, LoadModel::Open { .. });
    if open {
        line(&mut o, "Latency", &r.latency_us);
        line(&mut o, "Service time", &r.service_time_us);
        if let Some(l) = &r.send_lag_us {
            line(&mut o, "Send lag", l);
        }
        if let Some(l) = &r.schedule_lag_us {
            line(&mut o, " unqueued", l);
        }
        if let Some(l) = &r.wake_lag_us {
            line(&mut o, "  woken late", l);
        }
        if let Some(l) = &r.own_lag_us {
            line(&mut o, "  own", l);
        }
        let _ = writeln!(
            o,
            "  (latency from intended send time: no coordinated omission)"
        );
    } else {
        line(&mut o, "Latency", &r.latency_us);
        let _ = writeln!(
            o,
            "  (closed loop: service time from actual send; not latency under a fixed load)"
        );
    }
    let c = &r.counts;
    let _ = writeln!(
        o,
        "  {} responses in {:.2}s, {:.2} MB read",
        r.latency_us.samples,
        r.window_s,
        r.bytes_read as f64 / 1e6
    );
    let _ = writeln!(
        o,
        "  sent {} = ok {} + non-2xx {} + errors {} + timeouts {} + in flight {}",
        c.sent,
        c.ok,
        c.non_2xx,
        c.errors.total(),
        c.timeouts,
        c.in_flight_at_end
    );
    let e = &c.errors;
    if e.total() > 0 {
        let _ = writeln!(
            o,
            "  errors: connect {} read {} write {} parse {} reset {} status-mismatch {} body-mismatch {}",
            e.connect, e.read, e.write, e.parse, e.reset, e.status_mismatch, e.body_mismatch
        );
    }
    if open {
        let _ = writeln!(
            o,
            "  queued {} backlog at end {}",
            c.queued, c.backlog_at_end
        );
    }
    let k = &r.connections;
    let _ = writeln!(
        o,
        "  connections: requested {} established {} reconnected {} failed {}",
        k.requested, k.established, k.reconnected, k.failed
    );
    if let Some(s) = &r.connection_setup {
        let _ = writeln!(
            o,
            "  set-up ({}): p50 {} µs, p99 {} µs, max {} µs over {} connections",
            if r.tls.is_some() {
                "TCP + TLS handshake"
            } else {
                "TCP"
            },
            s.us.p50,
            s.us.p99,
            s.us.max,
            s.us.samples
        );
    }
    if let Some(t) = &r.tls {
        let _ = writeln!(
            o,
            "  TLS: {} {} {}, ALPN {}, server key {} (certificate chain {})",
            t.version,
            t.suite,
            t.key_exchange,
            t.alpn,
            t.server_key,
            if t.chain_verified {
                "verified"
            } else {
                "not verified"
            }
        );
    }
    let _ = writeln!(
        o,
        "Requests/sec: {:>12.2}  (ok/sec {:.2})",
        r.requests_per_s, r.ok_per_s
    );
    let g = &r.generator;
    let _ = writeln!(
        o,
        "Generator: {} thread(s), cpu {:.2}s user + {:.2}s sys, {:.2} µs/request, {:.2} wake-ups/request, busiest thread {:.0} %{}",
        g.threads,
        g.cpu_user_s,
        g.cpu_sys_s,
        g.cpu_us_per_request,
        g.wakeups_per_request,
        g.busiest_thread_busy * 100.0,
        match g.per_thread_spin_wait.iter().copied().fold(0.0, f64::max) {
            s if s >= 0.005 => format!(" (up to {:.0} % spin-waiting for due sends)", s * 100.0),
            _ => String::new(),
        }
    );
    if let Some(io) = &g.io {
        let backend = match io.backend {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "io_uring",
        };
        let _ = writeln!(o, "  I/O: {backend} ({})", io.reason);
        if let Some(r) = &io.receive {
            let mode = match r.mode {
                Receive::Multishot => "multishot into provided buffers",
                Receive::OneShot => "one-shot",
            };
            let _ = writeln!(o, "  receives: {mode} ({})", r.reason);
        }
    }
    if let Some(c) = &g.cost {
        let _ = writeln!(
            o,
            "  counted: {:.3} syscalls/request, {:.4} context switches/request ({} voluntary, {} involuntary), {} minor + {} major faults",
            c.syscalls_per_request,
            c.context_switches_per_request,
            c.voluntary_context_switches,
            c.involuntary_context_switches,
            c.minor_faults,
            c.major_faults
        );
    }
    if r.verdict.saturated {
        let _ = writeln!(o, "Verdict: GENERATOR MAY BE THE BOTTLENECK");
        for reason in &r.verdict.reasons {
            let _ = writeln!(o, "  - {reason}");
        }
    } else {
        let _ = writeln!(o, "Verdict: generator had headroom");
    }
    for p in &r.problems {
        let _ = writeln!(o, "Problem: {p}");
    }
    o
}
