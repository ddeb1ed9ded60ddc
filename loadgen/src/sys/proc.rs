//! Process/thread facts for the self-check: per-thread CPU time, the affinity mask, the fd
//! limit, and timer slack (so sub-millisecond waits are not rounded up by 50 µs).

use super::last_err;

/// CPU time consumed by the calling thread so far, (user, system) in µs.
pub fn thread_cpu_us() -> (u64, u64) {
    // SAFETY: all-zero rusage is valid; RUSAGE_THREAD exists since Linux 2.6.26.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    (us(ru.ru_utime), us(ru.ru_stime))
}

/// CPUs this process may run on (e.g. the set given by `taskset`).
pub fn allowed_cpus() -> Vec<u32> {
    // SAFETY: all-zero cpu_set_t is an empty set; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .map(|c| c as u32)
            .collect()
    }
}

/// Raise the soft `RLIMIT_NOFILE` to the hard limit; returns the new soft limit.
pub fn raise_nofile() -> std::io::Result<u64> {
    // SAFETY: valid pointers for both calls.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return Err(last_err());
        }
        if rl.rlim_cur < rl.rlim_max {
            rl.rlim_cur = rl.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &rl) != 0 {
                return Err(last_err());
            }
        }
        Ok(rl.rlim_cur)
    }
}

/// Ask the kernel to fire this thread's timers within 1 ns of the deadline (default slack
/// is 50 µs, which would show up directly as open-loop send lag).
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}
