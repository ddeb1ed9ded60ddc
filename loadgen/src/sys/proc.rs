//! Process/thread facts for the self-check: per-thread CPU time, the affinity mask, the fd
//! limit, and timer slack (so sub-millisecond waits are not rounded up by 50 µs).

use super::last_err;

/// The calling thread's getrusage figures so far.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadUsage {
    /// CPU time (user, system) in µs. Tick-sampled: a span read this way can be off by a
    /// scheduler tick (ms), so it only splits totals.
    user_us: u64,
    sys_us: u64,
    /// Voluntary (blocked, e.g. waiting for I/O) and involuntary (preempted) switches.
    vcsw: u64,
    ivcsw: u64,
    minflt: u64,
    majflt: u64,
}

fn thread_usage() -> ThreadUsage {
    // SAFETY: all-zero rusage is valid; RUSAGE_THREAD exists since Linux 2.6.26.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid out-pointer.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    ThreadUsage {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
        vcsw: ru.ru_nvcsw as u64,
        ivcsw: ru.ru_nivcsw as u64,
        minflt: ru.ru_minflt as u64,
        majflt: ru.ru_majflt as u64,
    }
}

/// CPU time consumed by the calling thread so far, ns: exact (`CLOCK_THREAD_CPUTIME_ID`
/// includes the running slice, unlike getrusage, which lags by up to a tick).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out-pointer; this clock exists on every Linux since 2.6.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's CPU clocks and the wall clock, read together to measure a span.
#[derive(Debug, Clone, Copy)]
pub struct CpuMark {
    wall_ns: u64,
    cpu_ns: u64,
    usage: ThreadUsage,
    syscalls: u64,
}

/// CPU a thread used over a span of wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuSpan {
    pub wall_ns: u64,
    pub cpu_ns: u64,
    /// `cpu_ns` split into user and system time in getrusage's proportions (the kernel
    /// splits its own totals the same way).
    pub user_us: u64,
    pub sys_us: u64,
    /// Syscalls the thread made through `sys` (`sys::count`).
    pub syscalls: u64,
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl CpuMark {
    /// Start of a span: the wall clock is read first so the CPU span fits inside it.
    pub fn start() -> Self {
        let wall_ns = super::clock::now_ns();
        let cpu_ns = thread_cpu_ns();
        let usage = thread_usage();
        Self {
            wall_ns,
            cpu_ns,
            usage,
            syscalls: super::count::syscalls(),
        }
    }

    /// End of a span: the wall clock is read last, for the same reason.
    pub fn end() -> Self {
        let syscalls = super::count::syscalls();
        let usage = thread_usage();
        let cpu_ns = thread_cpu_ns();
        let wall_ns = super::clock::now_ns();
        Self {
            wall_ns,
            cpu_ns,
            usage,
            syscalls,
        }
    }

    pub fn since(self, start: CpuMark) -> CpuSpan {
        let cpu_ns = self.cpu_ns.saturating_sub(start.cpu_ns);
        let (a, b) = (start.usage, self.usage);
        let user = b.user_us.saturating_sub(a.user_us);
        let sys = b.sys_us.saturating_sub(a.sys_us);
        let cpu_us = cpu_ns / 1_000;
        let user_us = if user + sys > 0 {
            (cpu_us as u128 * user as u128 / (user + sys) as u128) as u64
        } else {
            cpu_us
        };
        CpuSpan {
            wall_ns: self.wall_ns.saturating_sub(start.wall_ns),
            cpu_ns,
            user_us,
            sys_us: cpu_us - user_us,
            syscalls: self.syscalls.saturating_sub(start.syscalls),
            voluntary_switches: b.vcsw.saturating_sub(a.vcsw),
            involuntary_switches: b.ivcsw.saturating_sub(a.ivcsw),
            minor_faults: b.minflt.saturating_sub(a.minflt),
            major_faults: b.majflt.saturating_sub(a.majflt),
        }
    }
}

impl CpuSpan {
    /// Share of the span the thread was on a CPU (0..1). A thread cannot run longer than
    /// wall time; the clamp only absorbs the two clocks' different granularity.
    pub fn busy(&self) -> f64 {
        self.share(self.cpu_ns)
    }

    /// `ns` as a share of the span (0..1).
    pub fn share(&self, ns: u64) -> f64 {
        if self.wall_ns == 0 {
            return 0.0;
        }
        (ns as f64 / self.wall_ns as f64).min(1.0)
    }
}

/// The CPU the calling thread runs on right now (`None` if unknown).
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
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

/// The hard `RLIMIT_NOFILE` (what the soft limit can be raised to); `None` if unlimited or
/// unknown.
pub fn nofile_hard_limit() -> Option<u64> {
    // SAFETY: all-zero rlimit is valid; valid out-pointer.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0
        || rl.rlim_max == libc::RLIM_INFINITY
    {
        return None;
    }
    Some(rl.rlim_max)
}

/// Ports in `net.ipv4.ip_local_port_range` (shared by IPv6); `None` if it cannot be read.
pub fn ephemeral_ports() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (hi >= lo).then(|| hi - lo + 1)
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

/// Timer slack for a thread that sleeps to deadlines `period_ns` apart: the kernel may fire its
/// timers up to this late, to serve them with another interrupt. The default (50 µs) would dominate
/// send lag. Below 100 µs between sends, 20 µs of slack halves wake-ups (the late wake-up finds the
/// next send due too); above, it only adds lag, so 1 ns. Measured against ping-may-minihttp on one
/// core (scripts/experiments/loadgen-vs-wrk2.sh): at 20,000 req/s CPU per request 29 → 19 µs for a
/// send-lag p50 of ~40 µs instead of ~22 µs; at 5,000 req/s no CPU gain and send-lag p50
/// ~27 → ~48 µs.
pub fn sender_timer_slack_ns(period_ns: f64) -> u64 {
    if period_ns < 100_000.0 { 20_000 } else { 1 }
}

/// Set the calling thread's timer slack (ns).
pub fn set_timer_slack(slack_ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_span_is_near_one_and_a_sleeping_one_near_zero() {
        let a = CpuMark::start();
        let t = std::time::Instant::now();
        while t.elapsed().as_millis() < 30 {
            std::hint::spin_loop();
        }
        let spin = CpuMark::end().since(a);
        let a = CpuMark::start();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let sleep = CpuMark::end().since(a);
        assert!(
            spin.busy() <= 1.0 && sleep.busy() <= 0.2,
            "{spin:?} {sleep:?}"
        );
        assert_eq!(spin.user_us + spin.sys_us, spin.cpu_ns / 1000);
    }

    #[test]
    fn timer_slack_only_where_sends_are_close() {
        assert_eq!(sender_timer_slack_ns(50_000.0), 20_000); // 20,000/s
        assert_eq!(sender_timer_slack_ns(200_000.0), 1); // 5,000/s
        assert_eq!(sender_timer_slack_ns(f64::INFINITY), 1); // closed loop
    }

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
