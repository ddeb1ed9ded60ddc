//! The report's judgements: whether the generator may have limited the run (`Saturation`)
//! and what else a reader must know about it (`problems`). Thresholds live here only.

use crate::merge::Merged;
use crate::report::{Percentiles, Saturation};
use crate::spec::{DEFAULT_COALESCE_US, LoadModel, LoadSpec};

/// A worker thread at or above this CPU share may have limited the run.
const BUSY_LIMIT: f64 = 0.90;
/// How the busy-thread saturation reason begins (the runner recognises it by this).
pub const BUSY_REASON: &str = "a generator thread was";
/// Schedule left unsent at the window's end that still counts as the boundary (1 ms).
const BACKLOG_BOUNDARY_S: f64 = 0.001;
/// Open loop: sending less than this share of the target rate means the schedule slipped.
const RATE_SHORTFALL: f64 = 0.95;
/// Open loop: send-lag p99 above max(this, 10 % of latency p99) distorts latency.
const SEND_LAG_P99_LIMIT_US: u64 = 200;

/// Open loop: a send-lag p99 above this distorts latencies whose p99 is `latency_p99_us`.
pub fn send_lag_limit_us(latency_p99_us: u64) -> u64 {
    SEND_LAG_P99_LIMIT_US.max(latency_p99_us / 10)
}

/// Was the generator possibly the bottleneck? `schedule_lag` is `None` for the closed loop.
pub fn saturation(
    spec: &LoadSpec,
    m: &Merged,
    latency: &Percentiles,
    schedule_lag: Option<&Percentiles>,
) -> Saturation {
    let mut reasons = Vec::new();
    // Spin-waiting for a send due within microseconds is CPU spent by choice: a thread
    // that spins most of the time still has headroom (its schedule lag says how much).
    let busiest_working = m
        .busy
        .iter()
        .zip(&m.spin)
        .map(|(b, s)| (b - s).max(0.0))
        .fold(0.0, f64::max);
    if busiest_working >= BUSY_LIMIT {
        reasons.push(format!(
            "{BUSY_REASON} {:.0} % busy, spin-waits excluded (limit {:.0} %)",
            busiest_working * 100.0,
            BUSY_LIMIT * 100.0
        ));
    }
    let window_s = m.window_s();
    if let LoadModel::Open { rate_per_s, .. } = spec.model
        && window_s > 0.0
    {
        // Short of the rate with requests left waiting for a free connection, every
        // connection was awaiting the server: its latency, not the generator, set the pace
        // (`problems` says so). A server that answers nothing is that case at its extreme.
        if let Some(achieved) = shortfall(m, rate_per_s)
            && m.counts.queued == 0
            && !(m.counts.sent > 0 && m.responses() == 0)
        {
            reasons.push(format!(
                "open loop sent {achieved:.0} req/s, below {:.0} % of the {rate_per_s:.0} req/s target",
                RATE_SHORTFALL * 100.0
            ));
        }
    }
    if let Some(l) = schedule_lag {
        let limit = send_lag_limit_us(latency.p99);
        if l.p99 > limit {
            // Coalescing makes sends late by choice, and their latency counts that lateness
            // too, so it is not excused; the reader is told where it came from.
            let chosen = match spec.model {
                LoadModel::Open { coalesce_us, .. } if coalesce_us > DEFAULT_COALESCE_US => {
                    format!(" (--coalesce-us {coalesce_us} sends up to {coalesce_us} µs late)")
                }
                _ => String::new(),
            };
            reasons.push(format!(
                "send-lag p99 of requests with a free connection is {} µs, above {limit} µs{chosen}",
                l.p99
            ));
        }
    }
    Saturation {
        saturated: !reasons.is_empty(),
        reasons,
    }
}

/// Open loop: the rate sent, where it fell short of the target.
fn shortfall(m: &Merged, rate_per_s: f64) -> Option<f64> {
    let window_s = m.window_s();
    let achieved = m.counts.sent as f64 / window_s;
    (window_s > 0.0 && achieved < RATE_SHORTFALL * rate_per_s).then_some(achieved)
}

/// Things a reader must know that are not generator saturation.
pub fn problems(spec: &LoadSpec, m: &Merged) -> Vec<String> {
    let mut problems = m.gave_up.clone();
    let c = &m.counts;
    if let LoadModel::Open {
        rate_per_s,
        connections,
        ..
    } = spec.model
        && let Some(achieved) = shortfall(m, rate_per_s)
        && c.queued > 0
        && m.responses() > 0
    {
        problems.push(format!(
            "the server, not the generator, set the rate: {achieved:.0} req/s sent of {rate_per_s:.0} \
             req/s, {} requests waited for a free connection while all {connections} awaited \
             responses (raise the connections or lower the rate to offer the full rate)",
            c.queued
        ));
    }
    if m.connections.established == 0 && !problems.iter().any(|p| p.contains("refused")) {
        problems.push("no connection could be established".into());
    }
    if c.sent > 0 && m.responses() == 0 {
        problems.push(format!(
            "no response to any of {} requests: the server, not the generator, limited this run",
            c.sent
        ));
    }
    if c.timeouts > 0 {
        problems.push(format!("{} requests timed out", c.timeouts));
    }
    let unrequested = m.connections.protocol_violations;
    if unrequested > 0 {
        problems.push(format!(
            "the server sent responses nobody asked for on {unrequested} connections \
             (protocol violations; each such connection was closed, none counted as ok)"
        ));
    }
    let errors = c.errors.total();
    if errors > 0 {
        problems.push(format!("{errors} requests ended in errors"));
    }
    // A loop that wakes to send cannot stop closer to the window's end than one wake-up, so
    // up to 1 ms of schedule left unsent is the window boundary, not a shortfall. The count
    // stays in `counts.backlog_at_end` either way.
    let boundary = match spec.model {
        LoadModel::Open { rate_per_s, .. } => (rate_per_s * BACKLOG_BOUNDARY_S).ceil() as u64,
        LoadModel::Closed { .. } => 0,
    };
    if c.backlog_at_end > boundary {
        problems.push(format!(
            "{} scheduled requests were never sent",
            c.backlog_at_end
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(rate: f64) -> LoadSpec {
        LoadSpec {
            url: "http://127.0.0.1:1/ping".into(),
            model: LoadModel::Open {
                rate_per_s: rate,
                connections: 8,
                coalesce_us: DEFAULT_COALESCE_US,
            },
            threads: 1,
            keepalive: true,
            duration_ms: Some(1000),
            requests: None,
            warmup_ms: 0,
            timeout_ms: 1000,
            expect_status: 200,
            expect_body_bytes: None,
            headers: vec![],
            io: crate::IoChoice::Auto,
            protocol: Default::default(),
        }
    }

    /// One second of window, `sent` requests, `ok` answered, `queued` that waited.
    fn window(sent: u64, ok: u64, queued: u64) -> Merged {
        let mut m = Merged::new(&[], 1_000_000_000);
        m.window_ns = 1_000_000_000;
        m.counts.sent = sent;
        m.counts.ok = ok;
        m.counts.queued = queued;
        m.connections.established = 8;
        m
    }

    fn saturated(spec: &LoadSpec, m: &Merged) -> Saturation {
        let p = crate::merge::percentiles(&m.latency);
        saturation(spec, m, &p, None)
    }

    #[test]
    fn a_slow_server_that_holds_every_connection_is_not_generator_saturation() {
        let spec = open(2000.0);
        // 1,336 requests waited for one of the 8 connections: the server set the pace.
        let slow = window(600, 600, 1336);
        assert!(!saturated(&spec, &slow).saturated);
        let p = problems(&spec, &slow);
        assert!(
            p.iter().any(
                |x| x.starts_with("the server, not the generator, set the rate")
                    && x.contains("1336 requests waited")
            ),
            "{p:?}"
        );
        // Short of the rate with connections free: the generator's schedule slipped.
        let behind = window(600, 600, 0);
        let s = saturated(&spec, &behind);
        assert!(
            s.saturated && s.reasons[0].starts_with("open loop sent 600 req/s"),
            "{s:?}"
        );
        assert!(
            !problems(&spec, &behind)
                .iter()
                .any(|x| x.contains("set the rate"))
        );
        // At the rate: neither.
        let fine = window(2000, 2000, 0);
        assert!(!saturated(&spec, &fine).saturated);
        assert!(
            problems(&spec, &fine).is_empty(),
            "{:?}",
            problems(&spec, &fine)
        );
    }
}
