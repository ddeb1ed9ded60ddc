//! The per-thread HDR recorder: HdrHistograms, counters and the per-second timeline. Owned
//! by one worker thread (no atomics, no channels per request) and merged after join.

use hdrhistogram::Histogram;

use crate::http::response::Response;
use crate::report::Counts;
use crate::spec::HIST_MAX_US;

/// Timeline histograms only feed per-second p50/p99, so 2 digits (≤ 1 %) keep a long run's
/// timeline small (~25 KiB per thread-second instead of ~150 KiB).
const INTERVAL_SIGFIG: u8 = 2;

/// A histogram over 1 µs .. `HIST_MAX_US` at `sigfig` significant digits (3: ≤ 0.1 % error).
pub fn new_hist(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIST_MAX_US, sigfig).expect("static histogram bounds")
}

#[inline]
fn us(ns: u64) -> u64 {
    (ns / 1000).clamp(1, HIST_MAX_US)
}

/// Failure classes that end a request (see `report::ErrorCounts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    Connect,
    Read,
    Write,
    Parse,
    Reset,
}

pub struct IntervalAcc {
    pub responses: u64,
    pub errors: u64,
    pub hist: Histogram<u64>,
}

pub struct Recorder {
    window_start_ns: u64,
    expect_status: u16,
    expect_body_bytes: Option<u64>,
    /// Response time: from intended send (open loop) or actual send (closed loop).
    pub latency: Histogram<u64>,
    /// Open loop only: completion − actual send.
    pub service: Option<Histogram<u64>>,
    /// Open loop only: actual send − intended send.
    pub send_lag: Option<Histogram<u64>>,
    /// Open loop only: send lag of requests that found a free connection when due, i.e.
    /// the generator's own lateness without waiting for connections.
    pub schedule_lag: Option<Histogram<u64>>,
    /// Open loop only: the part of each schedule lag the thread spent not yet running
    /// after the time it had asked to be woken (see `Report::wake_lag_us`).
    pub wake_lag: Option<Histogram<u64>>,
    /// Open loop only: the rest of each schedule lag, the generator's own (see
    /// `Report::own_lag_us`).
    pub own_lag: Option<Histogram<u64>>,
    pub counts: Counts,
    pub status: Box<[u64; 600]>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub intervals: Vec<IntervalAcc>,
    cur_iv: usize,
    cur_iv_end_ns: u64,
}

impl Recorder {
    pub fn new(
        window_start_ns: u64,
        open_loop: bool,
        expect_status: u16,
        expect_body_bytes: Option<u64>,
    ) -> Self {
        Self {
            window_start_ns,
            expect_status,
            expect_body_bytes,
            latency: new_hist(3),
            service: open_loop.then(|| new_hist(3)),
            send_lag: open_loop.then(|| new_hist(3)),
            schedule_lag: open_loop.then(|| new_hist(3)),
            wake_lag: open_loop.then(|| new_hist(3)),
            own_lag: open_loop.then(|| new_hist(3)),
            counts: Counts::default(),
            status: Box::new([0; 600]),
            bytes_read: 0,
            bytes_written: 0,
            intervals: Vec::new(),
            cur_iv: 0,
            cur_iv_end_ns: 0,
        }
    }

    /// Where the measured window starts (known only once every worker is at the start line).
    pub fn set_window_start(&mut self, window_start_ns: u64) {
        self.window_start_ns = window_start_ns;
    }

    /// The timeline slot for an event at `now_ns` (allocates once per second).
    #[inline]
    fn interval(&mut self, now_ns: u64) -> &mut IntervalAcc {
        if now_ns >= self.cur_iv_end_ns || self.intervals.is_empty() {
            let idx = (now_ns.saturating_sub(self.window_start_ns) / 1_000_000_000) as usize;
            while self.intervals.len() <= idx {
                self.intervals.push(IntervalAcc {
                    responses: 0,
                    errors: 0,
                    hist: new_hist(INTERVAL_SIGFIG),
                });
            }
            self.cur_iv = idx;
            self.cur_iv_end_ns = self.window_start_ns + (idx as u64 + 1) * 1_000_000_000;
        }
        &mut self.intervals[self.cur_iv]
    }

    /// A response to a request issued inside the window. `intended_ns` = `sent_ns` in the
    /// closed loop.
    #[inline]
    pub fn response(&mut self, r: &Response, now_ns: u64, sent_ns: u64, intended_ns: u64) {
        let mismatch = if r.status == self.expect_status {
            if self.expect_body_bytes.is_some_and(|b| b != r.body_bytes) {
                self.counts.errors.body_mismatch += 1;
                true
            } else {
                self.counts.ok += 1;
                false
            }
        } else if (200..300).contains(&r.status) {
            self.counts.errors.status_mismatch += 1;
            true
        } else {
            self.counts.non_2xx += 1;
            false
        };
        if let Some(slot) = self.status.get_mut(r.status as usize) {
            *slot += 1;
        }
        let latency_us = us(now_ns.saturating_sub(intended_ns));
        self.latency.saturating_record(latency_us);
        if let Some(h) = &mut self.service {
            h.saturating_record(us(now_ns.saturating_sub(sent_ns)));
        }
        let iv = self.interval(now_ns);
        iv.responses += 1;
        iv.errors += mismatch as u64;
        iv.hist.saturating_record(latency_us);
    }

    /// Open loop: a request left for the wire `lag_ns` after its intended time, `wake_ns`
    /// of which the thread was waiting to be woken or run; `queued` when it had to wait for
    /// a free connection.
    #[inline]
    pub fn send_lag(&mut self, lag_ns: u64, wake_ns: u64, queued: bool) {
        if let Some(h) = &mut self.send_lag {
            h.saturating_record(us(lag_ns));
        }
        if queued {
            return;
        }
        if let Some(h) = &mut self.schedule_lag {
            h.saturating_record(us(lag_ns));
        }
        if let Some(h) = &mut self.wake_lag {
            h.saturating_record(us(wake_ns));
        }
        if let Some(h) = &mut self.own_lag {
            h.saturating_record(us(lag_ns.saturating_sub(wake_ns)));
        }
    }

    /// `n` requests ended with an error.
    pub fn error(&mut self, kind: ErrorKind, n: u64, now_ns: u64) {
        let e = &mut self.counts.errors;
        match kind {
            ErrorKind::Connect => e.connect += n,
            ErrorKind::Read => e.read += n,
            ErrorKind::Write => e.write += n,
            ErrorKind::Parse => e.parse += n,
            ErrorKind::Reset => e.reset += n,
        }
        self.interval(now_ns).errors += n;
    }

    /// `n` requests got no complete response within the timeout.
    pub fn timeout(&mut self, n: u64, now_ns: u64) {
        self.counts.timeouts += n;
        self.interval(now_ns).errors += n;
    }
}
