//! `--burn-ns N`, `--burn-iters N` and `--burn-syscalls N`: a known cost per request, the same
//! code in every service.
//!
//! Why: a calibration aid. Adding N ns of work per request must move the server CPU time per
//! request the runner measures by about N ns, in every service alike; that checks the
//! measurement rather than the runtimes. The cost is a busy loop against the monotonic clock on
//! the thread that answers the request: no sleep and no yield, or it would not be CPU time.
//! The default, 0, costs one relaxed load and a branch per request.
//!
//! `--burn-iters N` is the counted twin: N iterations of one fixed loop, so it adds the same
//! number of instructions per request on every machine whatever the clock does (a timed spin
//! retires more instructions on a faster CPU). It checks counted metrics (instructions per
//! request under Valgrind) the way `--burn-ns` checks CPU time.
//!
//! `--burn-syscalls N` adds one cheap system call (`getppid`, never cached by libc) every N
//! requests the process answers: a known number of kernel entries, 1/N per request, which
//! checks the counted syscalls per request and the gate that judges them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Largest `--burn-ns`: 1 s per request.
pub const MAX_BURN_NS: u64 = 1_000_000_000;

/// Largest `--burn-iters`: 10^9 iterations per request (seconds of CPU).
pub const MAX_BURN_ITERS: u64 = 1_000_000_000;

/// Largest `--burn-syscalls`: one syscall every 10^6 requests.
pub const MAX_BURN_SYSCALLS_EVERY: u64 = 1_000_000;

/// Set once at start-up, read on every request: a global keeps all nine services uniform
/// without threading a value through nine runtimes' handler states.
static BURN_NS: AtomicU64 = AtomicU64::new(0);
static BURN_ITERS: AtomicU64 = AtomicU64::new(0);
static BURN_SYSCALLS_EVERY: AtomicU64 = AtomicU64::new(0);
/// Requests answered while `--burn-syscalls` is on, across every worker thread.
static ANSWERED: AtomicU64 = AtomicU64::new(0);

/// Sets the per-request cost; [`crate::cli::run_service`] calls it before the service starts.
pub fn set_per_request_ns(ns: u64) {
    BURN_NS.store(ns, Ordering::Relaxed);
}

/// The per-request cost in effect (the start-up line reports it as `burn_ns`).
pub fn per_request_ns() -> u64 {
    BURN_NS.load(Ordering::Relaxed)
}

/// Sets the per-request loop count; [`crate::cli::run_service`] calls it before the service
/// starts.
pub fn set_per_request_iters(iters: u64) {
    BURN_ITERS.store(iters, Ordering::Relaxed);
}

/// The per-request loop count in effect.
pub fn per_request_iters() -> u64 {
    BURN_ITERS.load(Ordering::Relaxed)
}

/// Sets `--burn-syscalls`: one syscall every `every` requests (0: none); [`crate::cli::run_service`]
/// calls it before the service starts.
pub fn set_syscall_every(every: u64) {
    BURN_SYSCALLS_EVERY.store(every, Ordering::Relaxed);
}

/// The `--burn-syscalls` in effect (the start-up line reports it when not 0).
pub fn syscall_every() -> u64 {
    BURN_SYSCALLS_EVERY.load(Ordering::Relaxed)
}

/// Spends the configured cost. Every service calls it once per request it answers, where it
/// builds that request's response.
#[inline]
pub fn per_request() {
    spin_ns(per_request_ns());
    spin_iters(per_request_iters());
    let every = syscall_every();
    if every > 0 {
        syscall_if_due(every);
    }
}

/// One `getppid` when this request is the `every`-th since the last one. The counter is
/// shared by all workers, so the process makes exactly answered / every of them.
#[inline(never)]
fn syscall_if_due(every: u64) {
    if (ANSWERED.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(every) {
        // SAFETY: getppid takes no arguments and cannot fail.
        unsafe { libc::syscall(libc::SYS_getppid) };
    }
}

/// Runs `iters` iterations of one fixed loop (0: returns at once) and returns its result.
/// `black_box` keeps the compiler from folding or vectorising the chain, so every iteration
/// retires the same few instructions; `#[inline(never)]` keeps the loop one piece of code
/// whichever service calls it.
#[inline(never)]
pub fn spin_iters(iters: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..iters {
        x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
    }
    x
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

    #[test]
    fn iterations_are_a_fixed_chain() {
        assert_eq!(spin_iters(0), 0x9E37_79B9_7F4A_7C15);
        let one = 0x9E37_79B9_7F4A_7C15u64
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        assert_eq!(spin_iters(1), one);
        assert_ne!(spin_iters(1000), spin_iters(1001));
        assert_eq!(per_request_iters(), 0, "default: no loop");
    }
}
