//! The read-only plan every worker thread shares: target, request bytes, the time window
//! and the open-loop schedule. Times are absolute `CLOCK_MONOTONIC` nanoseconds.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::http::request::RequestBytes;
use crate::report::IoBackend;

#[derive(Clone)]
pub struct Plan {
    pub addr: SocketAddr,
    /// The request's bytes: HTTP/1.1's batch, or (h2c) the header block every stream sends.
    pub req: RequestBytes,
    pub keepalive: bool,
    pub pipeline: u32,
    pub threads: u32,
    pub warmup_ns: u64,
    pub duration_ns: Option<u64>,
    pub timeout_ns: u64,
    pub expect_status: u16,
    pub expect_body_bytes: Option<u64>,
    pub open: Option<OpenPlan>,
    /// The I/O layer every worker runs (`backend::choose`).
    pub io: IoBackend,
    /// On io_uring: receives are multishot into provided buffers (else one-shot).
    pub multishot: bool,
    /// Over TLS: the client every connection's session comes from.
    pub tls: Option<Arc<crate::tls::Client>>,
}

/// Open loop: global request `k` is intended at `t0 + k * ns_per_request`; thread `i` of
/// `T` owns every `k ≡ i (mod T)`, which spreads one timeline over all threads.
#[derive(Debug, Clone, Copy)]
pub struct OpenPlan {
    pub ns_per_request: f64,
    /// First `k` inside the measured window (earlier ones are warm-up).
    pub k_window: u64,
    /// One past the last `k` to schedule (`u64::MAX`: until the duration ends).
    pub k_end: u64,
    /// Sends due within this much of the next one share its wake-up.
    pub coalesce_ns: u64,
}

impl OpenPlan {
    pub fn new(
        rate_per_s: f64,
        warmup_ns: u64,
        duration_ns: Option<u64>,
        requests: Option<u64>,
        coalesce_ns: u64,
    ) -> Self {
        let ns_per_request = 1e9 / rate_per_s;
        let k_window = (warmup_ns as f64 / ns_per_request).ceil() as u64;
        let by_time = duration_ns
            .map(|d| ((warmup_ns + d) as f64 / ns_per_request).ceil() as u64)
            .unwrap_or(u64::MAX);
        let by_count = requests.map(|n| k_window + n).unwrap_or(u64::MAX);
        Self {
            ns_per_request,
            k_window,
            k_end: by_time.min(by_count),
            coalesce_ns,
        }
    }

    #[inline]
    pub fn intended_ns(&self, t0_ns: u64, k: u64) -> u64 {
        t0_ns.saturating_add((k as f64 * self.ns_per_request) as u64)
    }

    /// When the schedule ends: the intended time of `k_end` (`u64::MAX` if unbounded). An
    /// open-loop window never closes before it, so its rate is measured over the schedule.
    pub fn end_ns(&self, t0_ns: u64) -> u64 {
        self.intended_ns(t0_ns, self.k_end)
    }

    /// How many of thread `index`'s slots (`k = index + j * threads`, `k < k_end`) are due
    /// at `now_ns`, in O(1) whatever the rate (a loop over due slots cannot keep up with an
    /// absurd rate, and must not have to).
    pub fn due_slots(&self, t0_ns: u64, now_ns: u64, index: u32, threads: u32) -> u64 {
        if now_ns < t0_ns || self.k_end == 0 {
            return 0;
        }
        // Largest k with intended(k) <= now, from the float estimate corrected exactly.
        let mut k = (((now_ns - t0_ns) as f64 / self.ns_per_request) as u64).min(self.k_end - 1);
        while k + 1 < self.k_end && self.intended_ns(t0_ns, k + 1) <= now_ns {
            k += 1;
        }
        while k > 0 && self.intended_ns(t0_ns, k) > now_ns {
            k -= 1;
        }
        let (i, t) = (index as u64, threads as u64);
        if k < i { 0 } else { (k - i) / t + 1 }
    }

    /// First slot of thread `index` inside the measured window.
    pub fn first_window_slot(&self, index: u32, threads: u32) -> u64 {
        self.k_window
            .saturating_sub(index as u64)
            .div_ceil(threads as u64)
    }
}

/// Per-thread slice of the plan.
#[derive(Debug, Clone, Copy)]
pub struct Share {
    pub index: u32,
    pub connections: u32,
    /// Closed loop: requests this thread may issue inside the window.
    pub budget: Option<u64>,
}

/// Split `total` as evenly as possible; no remainder is dropped (wrk drops `c % t`).
pub fn split_even(total: u64, parts: u32, index: u32) -> u64 {
    total / parts as u64 + u64::from((index as u64) < total % parts as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_remainder() {
        let s: u64 = (0..3).map(|i| split_even(10, 3, i)).sum();
        assert_eq!(s, 10);
        assert_eq!(split_even(10, 3, 0), 4);
    }

    #[test]
    fn open_plan_bounds() {
        let p = OpenPlan::new(1000.0, 500_000_000, Some(1_000_000_000), None, 20_000);
        assert_eq!((p.k_window, p.k_end), (500, 1500));
        let p = OpenPlan::new(1000.0, 0, Some(1_000_000_000), Some(10), 20_000);
        assert_eq!((p.k_window, p.k_end), (0, 10));
        assert_eq!(p.intended_ns(5, 3), 3_000_005);
    }

    #[test]
    fn due_slots_match_counting_one_by_one() {
        for (rate, threads) in [(1000.0, 1), (3.0, 2), (7777.7, 3), (0.5, 1)] {
            let p = OpenPlan::new(rate, 0, Some(2_000_000_000), None, 20_000);
            for index in 0..threads {
                for now in (0..2_100_000_000u64).step_by(9_999_991) {
                    let brute = (0..p.k_end)
                        .filter(|k| k % threads as u64 == index as u64)
                        .filter(|&k| p.intended_ns(1000, k) <= now)
                        .count() as u64;
                    assert_eq!(
                        p.due_slots(1000, now, index, threads),
                        brute,
                        "{rate} {now}"
                    );
                }
            }
        }
    }

    #[test]
    fn first_window_slot_is_the_first_own_k_at_or_after_the_window() {
        let p = OpenPlan::new(1000.0, 10_000_000, None, None, 20_000);
        assert_eq!(p.k_window, 10);
        // Thread 1 of 3 owns k = 1, 4, 7, 10, ...: slot 3 is k = 10.
        assert_eq!(p.first_window_slot(1, 3), 3);
        assert_eq!(p.first_window_slot(2, 3), 3); // k = 11
        assert_eq!(p.first_window_slot(0, 3), 4); // k = 12
    }
}
