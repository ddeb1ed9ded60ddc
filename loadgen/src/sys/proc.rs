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

/// CPUs this process may run on (e.g. the set given by `taskset`); empty if unknown.
pub fn allowed_cpus() -> Vec<u32> {
    use nix::sched::{CpuSet, sched_getaffinity};
    use nix::unistd::Pid;
    let Ok(set) = sched_getaffinity(Pid::from_raw(0)) else {
        return Vec::new();
    };
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .map(|c| c as u32)
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_cpus_include_the_current_one() {
        let cpus = allowed_cpus();
        // SAFETY: plain syscall without arguments.
        let now = unsafe { libc::sched_getcpu() };
        assert!(
            now >= 0 && cpus.contains(&(now as u32)),
            "{now} not in {cpus:?}"
        );
    }
}
