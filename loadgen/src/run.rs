//! `run(&LoadSpec)`: validate, plan, start one worker per thread, join, and merge their
//! recorders into the versioned `Report` with its self-check verdict.

use std::sync::{Arc, Barrier, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use hdrhistogram::Histogram;

use crate::backend;
use crate::check;
use crate::hdr::hdr_v2_b64;
use crate::http::request::RequestBytes;
use crate::http::target;
use crate::merge::{Merged, percentiles};
use crate::report::{
    Generator, IoUsed, OpenLoopHistograms, OwnCost, Receive, Report, SCHEMA_VERSION, Setup,
};
use crate::spec::{LoadModel, LoadSpec};
use crate::sys::{clock, proc};
use crate::worker::plan::{OpenPlan, Plan, Share, split_even};
use crate::worker::{StartLine, Worker, WorkerTally};

impl LoadSpec {
    /// How long one run of this load may take on the wall clock, start to report: warm-up,
    /// the window (0 for a request count), the longest response wait, and 15 s of slack for
    /// start-up, connection set-up and writing the report. Whoever runs loadgen as a child
    /// kills it after this.
    pub fn wall_budget(&self) -> Duration {
        Duration::from_millis(
            self.warmup_ms + self.duration_ms.unwrap_or(0) + self.timeout_ms + 15_000,
        )
    }
}

/// Run one load as specified and report on it.
pub fn run(spec: &LoadSpec) -> Result<Report> {
    spec.validate()?;
    let io = backend::choose(spec)?;
    let target = target::resolve(&spec.url)?;
    if let Err(e) = proc::raise_nofile() {
        eprintln!("loadgen: warning: could not raise RLIMIT_NOFILE: {e}");
    }
    let ms = 1_000_000u64;
    let duration_ns = spec.duration_ms.map(|d| d * ms);
    let warmup_ns = spec.warmup_ms * ms;
    let open = match spec.model {
        LoadModel::Open {
            rate_per_s,
            coalesce_us,
            ..
        } => Some(OpenPlan::new(
            rate_per_s,
            warmup_ns,
            duration_ns,
            spec.requests,
            coalesce_us * 1_000,
        )),
        LoadModel::Closed { .. } => None,
    };
    let plan = Arc::new(Plan {
        addr: target.addr,
        req: RequestBytes::new(
            &target,
            &spec.headers,
            spec.keepalive,
            spec.pipeline(),
            spec.protocol,
        )
        .map_err(anyhow::Error::msg)?,
        keepalive: spec.keepalive,
        pipeline: spec.pipeline(),
        threads: spec.threads,
        warmup_ns,
        duration_ns,
        timeout_ns: spec.timeout_ms * ms,
        expect_status: spec.expect_status,
        expect_body_bytes: spec.expect_body_bytes,
        open,
        io: io.backend,
        multishot: io
            .receive
            .as_ref()
            .is_some_and(|r| r.mode == Receive::Multishot),
        tls: crate::tls::Client::new(spec.protocol, &target.host)
            .map_err(anyhow::Error::msg)?
            .map(Arc::new),
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
    Ok(build(spec, t0 + warmup_ns, started_unix_ms, tallies, io))
}

/// The report: merge the threads' tallies, summarize, judge, serialize the histogram.
fn build(
    spec: &LoadSpec,
    ws_ns: u64,
    started_unix_ms: u64,
    tallies: Vec<WorkerTally>,
    io: IoUsed,
) -> Report {
    let open = matches!(spec.model, LoadModel::Open { .. });
    let m = Merged::new(&tallies, ws_ns);
    let latency_us = percentiles(&m.latency);
    let service_time_us = if open {
        percentiles(&m.service)
    } else {
        latency_us.clone()
    };
    let send_lag_us = open.then(|| percentiles(&m.send_lag));
    let schedule_lag_us = open.then(|| percentiles(&m.schedule_lag));
    let wake_lag_us = open.then(|| percentiles(&m.wake_lag));
    let own_lag_us = open.then(|| percentiles(&m.own_lag));
    let verdict = check::saturation(spec, &m, &latency_us, schedule_lag_us.as_ref());
    let mut problems = check::problems(spec, &m);
    let mut encode = |h: &Histogram<u64>| {
        hdr_v2_b64(h).unwrap_or_else(|e| {
            problems.push(e);
            String::new()
        })
    };
    let latency_hdr_v2_b64 = encode(&m.latency);
    let connection_setup = (!m.setup.is_empty()).then(|| Setup {
        us: percentiles(&m.setup),
        hdr_v2_b64: encode(&m.setup),
    });
    let open_loop_hdr_v2_b64 = open.then(|| OpenLoopHistograms {
        service_time: encode(&m.service),
        send_lag: encode(&m.send_lag),
        schedule_lag: encode(&m.schedule_lag),
        wake_lag: Some(encode(&m.wake_lag)),
        own_lag: Some(encode(&m.own_lag)),
    });
    Report {
        schema_version: SCHEMA_VERSION,
        loadgen_version: env!("CARGO_PKG_VERSION").to_string(),
        spec: spec.clone(),
        started_unix_ms,
        window_s: m.window_s(),
        requests_per_s: m.per_s(m.responses()),
        ok_per_s: m.per_s(m.counts.ok),
        generator: generator(&m, io),
        latency_us,
        service_time_us,
        send_lag_us,
        schedule_lag_us,
        wake_lag_us,
        own_lag_us,
        counts: m.counts,
        connections: m.connections,
        connection_setup,
        tls: m.tls,
        status_counts: m.status,
        bytes_read: m.bytes_read,
        bytes_written: m.bytes_written,
        timeline: m.timeline,
        verdict,
        latency_hdr_v2_b64,
        open_loop_hdr_v2_b64,
        problems,
    }
}

/// The generator's own cost over the window.
fn generator(m: &Merged, io: IoUsed) -> Generator {
    let cpu_us = m.cpu_user_us + m.cpu_sys_us;
    let responses = m.responses();
    Generator {
        threads: m.busy.len() as u32,
        cpu_user_s: m.cpu_user_us as f64 / 1e6,
        cpu_sys_s: m.cpu_sys_us as f64 / 1e6,
        cpu_us_per_request: if responses > 0 {
            cpu_us as f64 / responses as f64
        } else {
            0.0
        },
        busiest_thread_busy: m.busy.iter().copied().fold(0.0, f64::max),
        per_thread_busy: m.busy.clone(),
        per_thread_spin_wait: m.spin.clone(),
        wakeups_per_request: if m.counts.sent > 0 {
            m.wakeups as f64 / m.counts.sent as f64
        } else {
            0.0
        },
        allowed_cpus: proc::allowed_cpus(),
        io: Some(io),
        cost: Some(OwnCost::sum(&m.cost, responses)),
    }
}
