//! The read-only plan every worker thread shares: target, request bytes, the time window
//! and the open-loop schedule. Times are absolute `CLOCK_MONOTONIC` nanoseconds.

use std::net::SocketAddr;

use crate::http::request::RequestBytes;

#[derive(Debug, Clone)]
pub struct Plan {
    pub addr: SocketAddr,
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
}

impl OpenPlan {
    pub fn new(
        rate_per_s: f64,
        warmup_ns: u64,
        duration_ns: Option<u64>,
        requests: Option<u64>,
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
        }
    }

    #[inline]
    pub fn intended_ns(&self, t0_ns: u64, k: u64) -> u64 {
        t0_ns + (k as f64 * self.ns_per_request) as u64
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
        let p = OpenPlan::new(1000.0, 500_000_000, Some(1_000_000_000), None);
        assert_eq!((p.k_window, p.k_end), (500, 1500));
        let p = OpenPlan::new(1000.0, 0, Some(1_000_000_000), Some(10));
        assert_eq!((p.k_window, p.k_end), (0, 10));
        assert_eq!(p.intended_ns(5, 3), 3_000_005);
    }
}
