//! `--burn-ns N`: a known CPU cost per request, the same code in every service.
//!
//! Why: a calibration aid. Adding N ns of work per request must move the server CPU time per
//! request the runner measures by about N ns, in every service alike; that checks the
//! measurement rather than the runtimes. The cost is a busy loop against the monotonic clock on
//! the thread that answers the request: no sleep and no yield, or it would not be CPU time.
//! The default, 0, costs one relaxed load and a branch per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Largest `--burn-ns`: 1 s per request.
pub const MAX_BURN_NS: u64 = 1_000_000_000;

/// Set once at start-up, read on every request: a global keeps all nine services uniform
/// without threading a value through nine runtimes' handler states.
static BURN_NS: AtomicU64 = AtomicU64::new(0);

/// Sets the per-request cost; [`crate::cli::run_service`] calls it before the service starts.
pub fn set_per_request_ns(ns: u64) {
    BURN_NS.store(ns, Ordering::Relaxed);
}

/// The per-request cost in effect (the start-up line reports it as `burn_ns`).
pub fn per_request_ns() -> u64 {
    BURN_NS.load(Ordering::Relaxed)
}

/// Spends the configured cost. Every service calls it once per request it answers, where it
/// builds that request's response.
#[inline]
pub fn per_request() {
    spin_ns(per_request_ns());
}

/// Spins on this CPU until `ns` nanoseconds of wall time have passed (0: returns at once).
/// Time the thread spends preempted counts too, so on an oversubscribed CPU it burns less.
pub fn spin_ns(ns: u64) {
    if ns == 0 {
        return;
    }
    let start = Instant::now();
    let span = Duration::from_nanos(ns);
    while start.elapsed() < span {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lower bounds only: an upper bound on wall time would flake on a shared machine.
    #[test]
    fn spins_at_least_the_given_time() {
        let start = Instant::now();
        spin_ns(2_000_000);
        assert!(start.elapsed() >= Duration::from_millis(2));
        spin_ns(0);
    }

    #[test]
    fn per_request_uses_the_configured_value() {
        assert_eq!(per_request_ns(), 0, "default: no cost");
        set_per_request_ns(1_000_000);
        let start = Instant::now();
        per_request();
        assert!(start.elapsed() >= Duration::from_millis(1));
        set_per_request_ns(0);
    }
}
