//! `run(&LoadSpec)`: validate, plan, start one worker per thread, join, and merge their
//! recorders into the versioned `Report` with its self-check verdict.

use std::sync::{Arc, Barrier, OnceLock};

use anyhow::{Context, Result, anyhow};
use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

use crate::http::request::RequestBytes;
use crate::http::target;
use crate::recorder::new_hist;
use crate::report::{
    ConnectionCounts, Counts, Generator, Interval, Percentiles, Report, SCHEMA_VERSION, Saturation,
};
use crate::spec::{LoadModel, LoadSpec};
use crate::sys::{clock, proc};
use crate::worker::plan::{OpenPlan, Plan, Share, split_even};
use crate::worker::{StartLine, Worker, WorkerTally};

/// A worker thread at or above this CPU share may have limited the run.
const BUSY_LIMIT: f64 = 0.90;
/// Schedule left unsent at the window's end that still counts as the boundary (1 ms).
const BACKLOG_BOUNDARY_S: f64 = 0.001;
/// Open loop: sending less than this share of the target rate means the schedule slipped.
const RATE_SHORTFALL: f64 = 0.95;
/// Open loop: send-lag p99 above max(this, 10 % of latency p99) distorts latency.
const SEND_LAG_P99_LIMIT_US: u64 = 200;

/// Run one load as specified and report on it.
pub fn run(spec: &LoadSpec) -> Result<Report> {
    spec.validate()?;
    let target = target::resolve(&spec.url)?;
    if let Err(e) = proc::raise_nofile() {
        eprintln!("loadgen: warning: could not raise RLIMIT_NOFILE: {e}");
    }
    let ms = 1_000_000u64;
    let duration_ns = spec.duration_ms.map(|d| d * ms);
    let warmup_ns = spec.warmup_ms * ms;
    let open = match spec.model {
        LoadModel::Open { rate_per_s, .. } => Some(OpenPlan::new(
            rate_per_s,
            warmup_ns,
            duration_ns,
            spec.requests,
        )),
        LoadModel::Closed { .. } => None,
    };
    let plan = Arc::new(Plan {
        addr: target.addr,
        req: RequestBytes::new(&target, &spec.headers, spec.keepalive, spec.pipeline()),
        keepalive: spec.keepalive,
        pipeline: spec.pipeline(),
        threads: spec.threads,
        warmup_ns,
        duration_ns,
        timeout_ns: spec.timeout_ms * ms,
        expect_status: spec.expect_status,
        expect_body_bytes: spec.expect_body_bytes,
        open,
    });
    let start = Arc::new(StartLine {
        barrier: Barrier::new(spec.threads as usize),
        t0_ns: OnceLock::new(),
    });
    let started_unix_ms = clock::unix_ms() + spec.warmup_ms;
    let mut handles = Vec::new();
    for i in 0..spec.threads {
        let share = Share {
            index: i,
            connections: split_even(spec.connections() as u64, spec.threads, i) as u32,
            budget: match spec.model {
                LoadModel::Closed { .. } => spec.requests.map(|n| split_even(n, spec.threads, i)),
                LoadModel::Open { .. } => None,
            },
        };
        let (plan, start) = (plan.clone(), start.clone());
        let h = std::thread::Builder::new()
            .name(format!("loadgen-{i}"))
            .spawn(move || match Worker::new(plan, share) {
                Ok(w) => Ok(w.run(&start)),
                Err(e) => {
                    start.barrier.wait();
                    Err(e)
                }
            })
            .context("spawning a worker thread")?;
        handles.push(h);
    }
    let mut tallies = Vec::new();
    for h in handles {
        let o = h
            .join()
            .map_err(|_| anyhow!("a worker thread panicked"))?
            .context("setting up a worker's event loop")?;
        tallies.push(o);
    }
    let t0 = *start.t0_ns.get().context("workers never started")?;
    Ok(build(spec, t0 + warmup_ns, started_unix_ms, tallies))
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let q = |p: f64| h.value_at_quantile(p);
    Percentiles {
        samples: h.len(),
        mean: h.mean(),
        stdev: h.stdev(),
        min: h.min(),
        p50: q(0.50),
        p75: q(0.75),
        p90: q(0.90),
        p99: q(0.99),
        p999: q(0.999),
        p9999: q(0.9999),
        max: h.max(),
    }
}

fn add_counts(a: &mut Counts, b: &Counts) {
    a.sent += b.sent;
    a.ok += b.ok;
    a.non_2xx += b.non_2xx;
    a.timeouts += b.timeouts;
    a.in_flight_at_end += b.in_flight_at_end;
    a.queued += b.queued;
    a.backlog_at_end += b.backlog_at_end;
    let (e, f) = (&mut a.errors, &b.errors);
    e.connect += f.connect;
    e.read += f.read;
    e.write += f.write;
    e.parse += f.parse;
    e.reset += f.reset;
    e.status_mismatch += f.status_mismatch;
    e.body_mismatch += f.body_mismatch;
}

fn build(spec: &LoadSpec, ws_ns: u64, started_unix_ms: u64, tallies: Vec<WorkerTally>) -> Report {
    let open = matches!(spec.model, LoadModel::Open { .. });
    let finished = tallies.iter().map(|o| o.finished_ns).max().unwrap_or(ws_ns);
    let window_ns = finished.saturating_sub(ws_ns);
    let window_s = window_ns as f64 / 1e9;
    let (mut latency, mut service, mut lag) = (new_hist(3), new_hist(3), new_hist(3));
    let mut sched_lag = new_hist(3);
    let mut counts = Counts::default();
    let mut conns = ConnectionCounts::default();
    let mut status = [0u64; 600];
    let (mut bytes_read, mut bytes_written) = (0, 0);
    let mut timeline: Vec<(u64, u64, Histogram<u64>)> = Vec::new();
    let (mut cpu_user_us, mut cpu_sys_us) = (0, 0);
    let mut busy = Vec::new();
    let mut spin = Vec::new();
    let mut problems = Vec::new();
    for o in &tallies {
        let r = &o.rec;
        // Same bounds everywhere, so `add` cannot fail.
        latency.add(&r.latency).expect("same histogram bounds");
        if let Some(h) = &r.service {
            service.add(h).expect("same histogram bounds");
        }
        if let Some(h) = &r.send_lag {
            lag.add(h).expect("same histogram bounds");
        }
        if let Some(h) = &r.schedule_lag {
            sched_lag.add(h).expect("same histogram bounds");
        }
        add_counts(&mut counts, &r.counts);
        conns.requested += o.connections.requested;
        conns.established += o.connections.established;
        conns.reconnected += o.connections.reconnected;
        conns.failed += o.connections.failed;
        conns.protocol_violations += o.unsolicited;
        for (i, n) in r.status.iter().enumerate() {
            status[i] += n;
        }
        bytes_read += r.bytes_read;
        bytes_written += r.bytes_written;
        for (i, iv) in r.intervals.iter().enumerate() {
            while timeline.len() <= i {
                timeline.push((0, 0, new_hist(2)));
            }
            let t = &mut timeline[i];
            t.0 += iv.responses;
            t.1 += iv.errors;
            t.2.add(&iv.hist).expect("same histogram bounds");
        }
        cpu_user_us += o.cpu_user_us;
        cpu_sys_us += o.cpu_sys_us;
        let share = |us: u64| {
            if window_ns > 0 {
                us as f64 * 1e3 / window_ns as f64
            } else {
                0.0
            }
        };
        busy.push(share(o.cpu_user_us + o.cpu_sys_us));
        spin.push(share(o.spin_wait_us));
        if let Some(why) = &o.gave_up
            && !problems.contains(why)
        {
            problems.push(why.clone());
        }
    }
    // One slot per started second of the window, even the ones where nothing completed.
    let n_iv = (window_ns.div_ceil(1_000_000_000) as usize).max(timeline.len());
    timeline.resize_with(n_iv, || (0, 0, new_hist(2)));
    let timeline: Vec<Interval> = timeline
        .into_iter()
        .enumerate()
        .map(|(i, (responses, errors, h))| {
            let len_s = (window_s - i as f64).clamp(1e-9, 1.0);
            Interval {
                t_s: i as u32,
                responses,
                requests_per_s: responses as f64 / len_s,
                p50_us: if h.is_empty() {
                    0
                } else {
                    h.value_at_quantile(0.5)
                },
                p99_us: if h.is_empty() {
                    0
                } else {
                    h.value_at_quantile(0.99)
                },
                errors,
            }
        })
        .collect();
    let responses =
        counts.ok + counts.non_2xx + counts.errors.status_mismatch + counts.errors.body_mismatch;
    let per_s = |n: u64| {
        if window_s > 0.0 {
            n as f64 / window_s
        } else {
            0.0
        }
    };
    let latency_us = percentiles(&latency);
    let service_time_us = if open {
        percentiles(&service)
    } else {
        latency_us.clone()
    };
    let send_lag_us = open.then(|| percentiles(&lag));
    let schedule_lag_us = open.then(|| percentiles(&sched_lag));

    let busiest = busy.iter().copied().fold(0.0, f64::max);
    // Spin-waiting for a send due within microseconds is CPU spent by choice: a thread
    // that spins most of the time still has headroom (its schedule lag says how much).
    let busiest_working = busy
        .iter()
        .zip(&spin)
        .map(|(b, s)| (b - s).max(0.0))
        .fold(0.0, f64::max);
    let mut reasons = Vec::new();
    if busiest_working >= BUSY_LIMIT {
        reasons.push(format!(
            "a generator thread was {:.0} % busy, spin-waits excluded (limit {:.0} %)",
            busiest_working * 100.0,
            BUSY_LIMIT * 100.0
        ));
    }
    if let LoadModel::Open { rate_per_s, .. } = spec.model
        && window_s > 0.0
    {
        let achieved = counts.sent as f64 / window_s;
        if achieved < RATE_SHORTFALL * rate_per_s {
            let why = if counts.queued > 0 {
                format!(
                    "; {} requests waited for a free connection: raise connections or lower the rate",
                    counts.queued
                )
            } else {
                String::new()
            };
            reasons.push(format!(
                "open loop sent {achieved:.0} req/s, below {:.0} % of the {rate_per_s:.0} req/s target{why}",
                RATE_SHORTFALL * 100.0
            ));
        }
    }
    if let Some(l) = &schedule_lag_us {
        let limit = SEND_LAG_P99_LIMIT_US.max(latency_us.p99 / 10);
        if l.p99 > limit {
            reasons.push(format!(
                "send-lag p99 of requests with a free connection is {} µs, above {limit} µs",
                l.p99
            ));
        }
    }

    if conns.established == 0 && !problems.iter().any(|p| p.contains("refused")) {
        problems.push("no connection could be established".into());
    }
    if counts.timeouts > 0 {
        problems.push(format!("{} requests timed out", counts.timeouts));
    }
    let errors = counts.errors.total();
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
    if counts.backlog_at_end > boundary {
        problems.push(format!(
            "{} scheduled requests were never sent",
            counts.backlog_at_end
        ));
    }

    let mut ser = V2DeflateSerializer::new();
    let mut buf = Vec::new();
    let latency_hdr_v2_b64 = match ser.serialize(&latency, &mut buf) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
        Err(e) => {
            problems.push(format!("histogram serialization failed: {e:?}"));
            String::new()
        }
    };
    let threads = tallies.len() as u32;
    Report {
        schema_version: SCHEMA_VERSION,
        loadgen_version: env!("CARGO_PKG_VERSION").to_string(),
        spec: spec.clone(),
        started_unix_ms,
        window_s,
        requests_per_s: per_s(responses),
        ok_per_s: per_s(counts.ok),
        latency_us,
        service_time_us,
        send_lag_us,
        schedule_lag_us,
        counts,
        connections: conns,
        status_counts: status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(s, n)| (s as u16, *n))
            .collect(),
        bytes_read,
        bytes_written,
        timeline,
        generator: Generator {
            threads,
            cpu_user_s: cpu_user_us as f64 / 1e6,
            cpu_sys_s: cpu_sys_us as f64 / 1e6,
            cpu_us_per_request: if responses > 0 {
                (cpu_user_us + cpu_sys_us) as f64 / responses as f64
            } else {
                0.0
            },
            busiest_thread_busy: busiest,
            per_thread_busy: busy,
            per_thread_spin_wait: spin,
            allowed_cpus: proc::allowed_cpus(),
        },
        verdict: Saturation {
            saturated: !reasons.is_empty(),
            reasons,
        },
        latency_hdr_v2_b64,
        problems,
    }
}
