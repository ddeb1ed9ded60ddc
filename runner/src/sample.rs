//! Sampling a process's CPU time and memory from /proc at a fixed rate on a side thread,
//! then cutting the samples to the generator's measured window.
//!
//! CPU = the process's CPU-time clock (`clock_getcpuclockid`: ns resolution, every thread's
//! run time including threads that have exited), falling back to utime+stime from
//! /proc/<pid>/stat (clock ticks, also counting exited threads) where that clock cannot be
//! read. (A sum over the live threads' schedstat, as this once was, runs backwards when a
//! thread exits: a thread-per-connection server lost its connections' CPU when they closed,
//! and its window's CPU came out as nothing.)

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::results::schema::ServerUsage;

pub const INTERVAL_MS: u64 = 50;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub t_unix_us: u64,
    pub cpu_us: f64,
    pub rss_bytes: u64,
    pub hwm_bytes: u64,
    pub threads: u32,
}

pub fn now_unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// The process's CPU-time clock now (µs): the run time of all its threads, live and exited.
fn clock_cpu_us(pid: u32) -> Option<f64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: clock_getcpuclockid writes one clockid_t; clock_gettime one timespec.
    unsafe {
        if libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) != 0 {
            return None;
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(ts.tv_sec as f64 * 1e6 + ts.tv_nsec as f64 / 1e3)
    }
}

/// utime+stime (µs) and the start time (clock ticks since boot: with the pid, which process
/// this is) from /proc/<pid>/stat.
fn stat_cpu_us(pid: u32) -> Option<(f64, u64)> {
    let s = crate::process::ProcStat::read(pid)?;
    Some((s.user_us() + s.system_us(), s.start))
}

/// `VmRSS`, `VmHWM` (bytes) and `Threads` from /proc/<pid>/status.
pub fn status(pid: u32) -> Option<(u64, u64, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    Some((
        kb("VmRSS:")? * 1024,
        kb("VmHWM:").unwrap_or(0) * 1024,
        kb("Threads:").unwrap_or(0) as u32,
    ))
}

pub fn sample(pid: u32) -> Option<Sample> {
    sample_of(pid).map(|(_, s)| s)
}

/// [`sample`], with the process's start time: a pid and its start time name one process.
fn sample_of(pid: u32) -> Option<(u64, Sample)> {
    let (stat_cpu, start) = stat_cpu_us(pid)?;
    let (rss, hwm, threads) = status(pid)?;
    let cpu = clock_cpu_us(pid).unwrap_or(stat_cpu);
    Some((
        start,
        Sample {
            t_unix_us: now_unix_us(),
            cpu_us: cpu,
            rss_bytes: rss,
            hwm_bytes: hwm,
            threads,
        },
    ))
}

/// Sampling a whole process tree: the sum over its members of CPU, RSS and threads. A
/// member that exits keeps the CPU it had at its last sample, so the tree's CPU never runs
/// backwards (what it ran after that sample is lost: at most one interval's worth). Members
/// are told apart by pid and start time: a pid the kernel gives to a new member is a new
/// member, not the old one's CPU falling back.
#[derive(Debug, Default)]
pub struct TreeSampler {
    tree: crate::process::Tree,
    last_cpu_us: std::collections::BTreeMap<(u32, u64), f64>,
}

impl TreeSampler {
    pub fn new(tree: crate::process::Tree) -> TreeSampler {
        TreeSampler {
            tree,
            last_cpu_us: Default::default(),
        }
    }

    /// One sample of the tree now; None once no member is left.
    pub fn sample(&mut self) -> Option<Sample> {
        let mut any = None;
        let (mut rss, mut hwm, mut threads) = (0, 0, 0);
        for pid in self.tree.members() {
            let Some((start, s)) = sample_of(pid) else {
                continue;
            };
            // Never below an earlier sample of the same process (the tick-resolution
            // fallback and the clock may alternate).
            let cpu = self.last_cpu_us.entry((pid, start)).or_insert(s.cpu_us);
            *cpu = cpu.max(s.cpu_us);
            rss += s.rss_bytes;
            hwm += s.hwm_bytes;
            threads += s.threads;
            any = Some(s.t_unix_us);
        }
        Some(Sample {
            t_unix_us: any?,
            cpu_us: self.last_cpu_us.values().sum(),
            rss_bytes: rss,
            hwm_bytes: hwm,
            threads,
        })
    }
}

/// RSS, peak RSS and threads of a whole tree now (summed over its members), as [`status`].
pub fn tree_status(tree: &crate::process::Tree) -> Option<(u64, u64, u32)> {
    let all: Vec<_> = tree.members().into_iter().filter_map(status).collect();
    (!all.is_empty()).then(|| {
        all.iter()
            .fold((0, 0, 0), |(r, h, t), s| (r + s.0, h + s.1, t + s.2))
    })
}

/// The one /proc poller: `read` once before [`Poller::start`] returns (a window cannot start
/// before the first read), then every [`INTERVAL_MS`] on a thread of its own, and once more
/// when finished. What a service's observers read (CPU, memory and the kernel's counts, in one
/// pass over the tree: `observe`) and what the generator is counted with (`count::Counter`).
pub struct Poller<T> {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<T>>,
}

impl<T: Send + 'static> Poller<T> {
    pub fn start(mut read: impl FnMut() -> Option<T> + Send + 'static) -> Poller<T> {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let first = read();
        let handle = std::thread::spawn(move || {
            let mut out: Vec<T> = first.into_iter().collect();
            while !s2.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(INTERVAL_MS));
                out.extend(read());
            }
            out.extend(read());
            out
        });
        Poller { stop, handle }
    }

    /// Stops polling; every read, in order.
    pub fn finish(self) -> Vec<T> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// A counter's value at `t_unix_us` from (unix µs, cumulative value) reads, interpolated
/// linearly between its neighbours; `None` outside the reads (a window edge before the first
/// read or after the last is not guessed). The one interpolation of a polled counter: the
/// server's CPU time here, the generator's counts in `count::timeline`.
pub fn value_at(points: &[(u64, f64)], t_unix_us: u64) -> Option<f64> {
    let after = points.iter().position(|p| p.0 >= t_unix_us)?;
    if after == 0 {
        return (points[0].0 == t_unix_us).then_some(points[0].1);
    }
    let (a, b) = (points[after - 1], points[after]);
    let span = (b.0 - a.0) as f64;
    let frac = if span > 0.0 {
        (t_unix_us - a.0) as f64 / span
    } else {
        1.0
    };
    Some(a.1 + (b.1 - a.1) * frac)
}

/// CPU time at `t`, interpolated between the neighbouring samples.
fn cpu_at(samples: &[Sample], t: u64) -> Option<f64> {
    let points: Vec<(u64, f64)> = samples.iter().map(|s| (s.t_unix_us, s.cpu_us)).collect();
    value_at(&points, t)
}

/// Server usage inside [start, start+window] given `responses` completed in it.
pub fn usage_in_window(
    samples: &[Sample],
    start_unix_us: u64,
    window_s: f64,
    responses: u64,
) -> ServerUsage {
    let end = start_unix_us + (window_s * 1e6) as u64;
    let inside: Vec<&Sample> = samples
        .iter()
        .filter(|s| s.t_unix_us >= start_unix_us && s.t_unix_us <= end)
        .collect();
    let (cpu_us, cpu_unmeasured) = match (cpu_at(samples, start_unix_us), cpu_at(samples, end)) {
        (Some(a), Some(b)) if b >= a => (Some(b - a), None),
        (Some(a), Some(b)) => (
            None,
            Some(format!(
                "the service's CPU time ran backwards across the window ({a:.0} µs at its start, {b:.0} µs at its end)"
            )),
        ),
        (a, _) => (
            None,
            Some(format!(
                "no read of the service's CPU time {} the window ({} samples of its processes in all)",
                if a.is_none() {
                    "at or before the start of"
                } else {
                    "at or after the end of"
                },
                samples.len()
            )),
        ),
    };
    let rss: Vec<u64> = inside.iter().map(|s| s.rss_bytes).collect();
    ServerUsage {
        samples: inside.len() as u32,
        sample_interval_ms: INTERVAL_MS,
        cpu_us,
        cpu_us_per_request: cpu_us
            .filter(|_| responses > 0)
            .map(|c| c / responses as f64),
        cpu_unmeasured,
        cpu_cores_busy: cpu_us
            .filter(|_| window_s > 0.0)
            .map(|c| c / (window_s * 1e6)),
        rss_mean_bytes: (!rss.is_empty()).then(|| rss.iter().sum::<u64>() / rss.len() as u64),
        rss_peak_bytes: rss.iter().copied().max(),
        vmhwm_bytes: samples
            .iter()
            .filter(|s| s.t_unix_us <= end + INTERVAL_MS * 2000)
            .map(|s| s.hwm_bytes)
            .max(),
        threads: inside.last().map(|s| s.threads),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: u64, cpu: f64, rss: u64) -> Sample {
        Sample {
            t_unix_us: t,
            cpu_us: cpu,
            rss_bytes: rss,
            hwm_bytes: rss,
            threads: 2,
        }
    }

    #[test]
    fn window_interpolates_cpu_and_averages_rss() {
        // CPU grows 1 µs per µs (one core busy) from t=0.
        let samples: Vec<Sample> = (0..=20)
            .map(|i| s(i * 100_000, (i * 100_000) as f64, 1000 + i))
            .collect();
        let u = usage_in_window(&samples, 250_000, 1.0, 1000);
        assert!((u.cpu_us.unwrap() - 1_000_000.0).abs() < 1e-6);
        assert!((u.cpu_us_per_request.unwrap() - 1000.0).abs() < 1e-6);
        assert!((u.cpu_cores_busy.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(u.samples, 10);
        assert_eq!(u.rss_peak_bytes, Some(1012));
    }

    #[test]
    fn window_outside_samples_gives_none_with_the_reason() {
        let samples = vec![s(0, 0.0, 1), s(100, 10.0, 1)];
        let u = usage_in_window(&samples, 1_000_000, 1.0, 10);
        assert_eq!(u.cpu_us, None);
        let reason = u.cpu_unmeasured.unwrap_or_default();
        assert!(
            reason.contains("at or before the start of the window"),
            "{reason}"
        );
        let samples = vec![s(0, 0.0, 1), s(1_500_000, 10.0, 1)];
        let u = usage_in_window(&samples, 1_000_000, 1.0, 10);
        assert_eq!(u.cpu_us, None);
        let reason = u.cpu_unmeasured.unwrap_or_default();
        assert!(
            reason.contains("at or after the end of the window"),
            "{reason}"
        );
        let backwards = vec![s(0, 50.0, 1), s(2_000_000, 10.0, 1)];
        let u = usage_in_window(&backwards, 0, 1.0, 10);
        assert_eq!(u.cpu_us_per_request, None);
        assert!(u.cpu_unmeasured.unwrap().contains("ran backwards"));
        let ok = usage_in_window(&[s(0, 0.0, 1), s(2_000_000, 10.0, 1)], 0, 1.0, 10);
        assert_eq!(ok.cpu_unmeasured, None);
    }

    #[test]
    fn samples_self() {
        let me = sample(std::process::id()).unwrap();
        assert!(me.rss_bytes > 0 && me.threads >= 1);
    }

    /// A thread-per-connection server's CPU once ran backwards when a connection's thread
    /// exited (its run time left the sum over live threads): its window read no CPU at all.
    #[test]
    fn a_process_keeps_the_cpu_of_its_threads_that_exited() {
        let me = std::process::id();
        let before = sample(me).unwrap().cpu_us;
        // A thread that runs 50 ms of CPU (its own clock), then exits.
        std::thread::spawn(|| {
            let thread_ns = || {
                // SAFETY: clock_gettime writes one timespec.
                let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
                unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
                ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
            };
            let mut x = 0u64;
            while thread_ns() < 50_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        })
        .join()
        .unwrap();
        let after = sample(me).unwrap().cpu_us;
        assert!(after - before >= 49_000.0, "{before} → {after} µs");
    }
}
