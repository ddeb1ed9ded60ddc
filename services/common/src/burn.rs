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
//!
//! `--burn-faults N` touches N fresh pages per request: N minor page faults, kernel work that
//! is neither a syscall nor a packet. The pages are in one region mapped at start-up (16 MiB,
//! no transparent huge pages, so one touch is one 4 KiB fault); when the touches reach its
//! end, one `madvise(MADV_DONTNEED)` returns every page and the next touches fault again —
//! one syscall per 4096 / N requests, under any gate's floor. It checks the gate's page-fault
//! arm. RSS grows by up to the region's 16 MiB.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Largest `--burn-ns`: 1 s per request.
pub const MAX_BURN_NS: u64 = 1_000_000_000;

/// Largest `--burn-iters`: 10^9 iterations per request (seconds of CPU).
pub const MAX_BURN_ITERS: u64 = 1_000_000_000;

/// Largest `--burn-syscalls`: one syscall every 10^6 requests.
pub const MAX_BURN_SYSCALLS_EVERY: u64 = 1_000_000;

/// Largest `--burn-faults`: 64 page faults per request.
pub const MAX_BURN_FAULTS: u64 = 64;

/// Pages of the `--burn-faults` region (16 MiB of 4 KiB pages).
const FAULT_PAGES: u64 = 4096;
const PAGE: usize = 4096;

/// Set once at start-up, read on every request: a global keeps all nine services uniform
/// without threading a value through nine runtimes' handler states.
static BURN_NS: AtomicU64 = AtomicU64::new(0);
static BURN_ITERS: AtomicU64 = AtomicU64::new(0);
static BURN_SYSCALLS_EVERY: AtomicU64 = AtomicU64::new(0);
/// Requests answered while `--burn-syscalls` is on, across every worker thread.
static ANSWERED: AtomicU64 = AtomicU64::new(0);
static BURN_FAULTS: AtomicU64 = AtomicU64::new(0);
/// The `--burn-faults` region's address (0: none) and the pages touched since start-up.
static FAULT_REGION: AtomicUsize = AtomicUsize::new(0);
static TOUCHED: AtomicU64 = AtomicU64::new(0);

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

/// Sets `--burn-faults`: N page faults per request (0: none), mapping the region they touch;
/// [`crate::cli::run_service`] calls it before the service starts. Err when the region cannot
/// be mapped.
pub fn set_faults(n: u64) -> std::io::Result<()> {
    if n > 0 && FAULT_REGION.load(Ordering::Relaxed) == 0 {
        let len = FAULT_PAGES as usize * PAGE;
        // SAFETY: a fresh private anonymous mapping; no memory of ours is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // One touch, one 4 KiB fault: no huge page would serve 512 touches with one.
        // SAFETY: the whole range was just mapped by us.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        FAULT_REGION.store(p as usize, Ordering::Relaxed);
    }
    BURN_FAULTS.store(n, Ordering::Relaxed);
    Ok(())
}

/// The `--burn-faults` in effect.
pub fn faults_per_request() -> u64 {
    BURN_FAULTS.load(Ordering::Relaxed)
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
    let faults = faults_per_request();
    if faults > 0 {
        touch_pages(faults);
    }
}

/// Touches the next `n` pages of the region, each for the first time since the region was last
/// returned to the kernel (a minor fault each); the request whose touches wrap past its end
/// returns it first (`MADV_DONTNEED`: the next touch of every page faults again).
#[inline(never)]
fn touch_pages(n: u64) {
    let base = FAULT_REGION.load(Ordering::Relaxed);
    if base == 0 {
        return;
    }
    let first = TOUCHED.fetch_add(n, Ordering::Relaxed);
    // This request's touches start a round of the region (page 0 again): return it first.
    if first > 0 && (first + n - 1) / FAULT_PAGES != (first - 1) / FAULT_PAGES {
        // SAFETY: the region is ours for the process's life; dropping its pages only makes
        // the next reads see zeros, and nothing reads them.
        unsafe {
            libc::madvise(
                base as *mut libc::c_void,
                FAULT_PAGES as usize * PAGE,
                libc::MADV_DONTNEED,
            )
        };
    }
    for i in first..first + n {
        let page = (i % FAULT_PAGES) as usize;
        // SAFETY: page < FAULT_PAGES, inside the mapped region; a volatile write so the
        // touch is not optimised away.
        unsafe { std::ptr::write_volatile((base + page * PAGE) as *mut u8, 1) };
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

    fn thread_minor_faults() -> i64 {
        // SAFETY: getrusage fills the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) };
        u.ru_minflt
    }

    /// N touches a request are N faults, across the region's returns to the kernel (three
    /// times round it here).
    #[test]
    fn each_touch_is_one_page_fault() {
        set_faults(2).unwrap();
        let requests = 3 * FAULT_PAGES as i64 / 2 + 7;
        let before = thread_minor_faults();
        for _ in 0..requests {
            touch_pages(2);
        }
        let faults = thread_minor_faults() - before;
        set_faults(0).unwrap();
        assert!(
            (2 * requests..=2 * requests + 16).contains(&faults),
            "{faults} faults for {requests} requests at 2 a request"
        );
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
