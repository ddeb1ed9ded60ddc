//! Merging the worker threads' tallies after join: histograms, counters, the per-second
//! timeline and each thread's CPU share. Pure bookkeeping; judgements live in `check`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::recorder::new_hist;
use crate::report::{ConnectionCounts, Counts, Interval, OwnCost, Percentiles};
use crate::worker::WorkerTally;

/// All threads' measurements over one window of `window_ns`.
pub struct Merged {
    pub window_ns: u64,
    pub latency: Histogram<u64>,
    pub service: Histogram<u64>,
    pub send_lag: Histogram<u64>,
    pub schedule_lag: Histogram<u64>,
    pub wake_lag: Histogram<u64>,
    pub own_lag: Histogram<u64>,
    pub counts: Counts,
    pub connections: ConnectionCounts,
    pub status: BTreeMap<u16, u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub timeline: Vec<Interval>,
    pub cpu_user_us: u64,
    pub cpu_sys_us: u64,
    /// Sleeps that ended in a wake-up, all threads.
    pub wakeups: u64,
    /// Per thread: CPU time / the thread's measured span (0..1).
    pub busy: Vec<f64>,
    /// Per thread: spin-wait time / the thread's measured span (0..1).
    pub spin: Vec<f64>,
    /// Why threads stopped early, each reason once.
    pub gave_up: Vec<String>,
    /// Per thread: its counted syscalls, context switches and faults over its span.
    pub cost: Vec<OwnCost>,
    /// Connection set-up times (µs), every thread.
    pub setup: Histogram<u64>,
    /// Over TLS: the first thread's negotiated session.
    pub tls: Option<crate::report::TlsSession>,
}

impl Merged {
    /// Merge `tallies` of a window that started at `ws_ns`; it ends when the last thread
    /// stopped.
    pub fn new(tallies: &[WorkerTally], ws_ns: u64) -> Self {
        let finished = tallies.iter().map(|t| t.finished_ns).max().unwrap_or(ws_ns);
        let window_ns = finished.saturating_sub(ws_ns);
        let mut m = Merged {
            window_ns,
            latency: new_hist(3),
            service: new_hist(3),
            send_lag: new_hist(3),
            schedule_lag: new_hist(3),
            wake_lag: new_hist(3),
            own_lag: new_hist(3),
            counts: Counts::default(),
            connections: ConnectionCounts::default(),
            status: BTreeMap::new(),
            bytes_read: 0,
            bytes_written: 0,
            timeline: Vec::new(),
            cpu_user_us: 0,
            cpu_sys_us: 0,
            wakeups: 0,
            busy: Vec::new(),
            spin: Vec::new(),
            gave_up: Vec::new(),
            cost: Vec::new(),
            setup: new_hist(3),
            tls: None,
        };
        let mut seconds = Vec::new();
        for t in tallies {
            m.absorb(t, &mut seconds);
        }
        m.timeline = timeline(seconds, window_ns);
        m
    }

    pub fn window_s(&self) -> f64 {
        self.window_ns as f64 / 1e9
    }

    /// Complete responses (validated or not) inside the window.
    pub fn responses(&self) -> u64 {
        let c = &self.counts;
        c.ok + c.non_2xx + c.errors.status_mismatch + c.errors.body_mismatch
    }

    /// `n` per second of window (0 for an empty window).
    pub fn per_s(&self, n: u64) -> f64 {
        if self.window_ns > 0 {
            n as f64 / self.window_s()
        } else {
            0.0
        }
    }

    fn absorb(&mut self, t: &WorkerTally, seconds: &mut Vec<Second>) {
        let r = &t.rec;
        // Same bounds everywhere, so `add` cannot fail.
        let add = |into: &mut Histogram<u64>, h: &Histogram<u64>| {
            into.add(h).expect("same histogram bounds")
        };
        add(&mut self.latency, &r.latency);
        for (into, h) in [
            (&mut self.service, &r.service),
            (&mut self.send_lag, &r.send_lag),
            (&mut self.schedule_lag, &r.schedule_lag),
            (&mut self.wake_lag, &r.wake_lag),
            (&mut self.own_lag, &r.own_lag),
        ] {
            if let Some(h) = h {
                add(into, h);
            }
        }
        self.counts += &r.counts;
        self.connections += &t.connections;
        // A worker counts the connections it dropped for unrequested bytes apart.
        self.connections.protocol_violations += t.unsolicited;
        for (code, n) in r.status.iter().enumerate().filter(|(_, n)| **n > 0) {
            *self.status.entry(code as u16).or_default() += n;
        }
        self.bytes_read += r.bytes_read;
        self.bytes_written += r.bytes_written;
        for (i, iv) in r.intervals.iter().enumerate() {
            if seconds.len() <= i {
                seconds.resize_with(i + 1, Second::new);
            }
            let s = &mut seconds[i];
            s.responses += iv.responses;
            s.errors += iv.errors;
            add(&mut s.hist, &iv.hist);
        }
        self.cpu_user_us += t.cpu.user_us;
        self.cpu_sys_us += t.cpu.sys_us;
        self.wakeups += t.wakeups;
        // Each thread's share of its own measured span (the window, up to its stop).
        self.busy.push(t.cpu.busy());
        self.spin.push(t.cpu.share(t.spin_wait_ns));
        self.cost.push(OwnCost {
            syscalls: t.cpu.syscalls,
            voluntary_context_switches: t.cpu.voluntary_switches,
            involuntary_context_switches: t.cpu.involuntary_switches,
            minor_faults: t.cpu.minor_faults,
            major_faults: t.cpu.major_faults,
            ..OwnCost::default()
        });
        if let Some(why) = &t.gave_up
            && !self.gave_up.contains(why)
        {
            self.gave_up.push(why.clone());
        }
        add(&mut self.setup, &t.setup);
        if self.tls.is_none() {
            self.tls.clone_from(&t.tls_session);
        }
        // A TLS failure is why connections failed: said once, like a thread's early stop.
        if let Some(why) = &t.tls_error
            && !self.gave_up.contains(why)
        {
            self.gave_up.push(why.clone());
        }
    }
}

/// One second of the timeline while merging.
struct Second {
    responses: u64,
    errors: u64,
    hist: Histogram<u64>,
}

impl Second {
    fn new() -> Self {
        Self {
            responses: 0,
            errors: 0,
            hist: new_hist(2),
        }
    }
}

/// One entry per started second of the window, even those where nothing completed.
fn timeline(mut seconds: Vec<Second>, window_ns: u64) -> Vec<Interval> {
    let n = (window_ns.div_ceil(1_000_000_000) as usize).max(seconds.len());
    seconds.resize_with(n, Second::new);
    let window_s = window_ns as f64 / 1e9;
    let q = |h: &Histogram<u64>, p: f64| {
        if h.is_empty() {
            0
        } else {
            h.value_at_quantile(p)
        }
    };
    seconds
        .into_iter()
        .enumerate()
        .map(|(i, s)| Interval {
            t_s: i as u32,
            responses: s.responses,
            requests_per_s: s.responses as f64 / (window_s - i as f64).clamp(1e-9, 1.0),
            p50_us: q(&s.hist, 0.5),
            p99_us: q(&s.hist, 0.99),
            errors: s.errors,
        })
        .collect()
}

pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
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
