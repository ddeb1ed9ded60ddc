//! Sampling a process's CPU time and memory from /proc at a fixed rate on a side thread,
//! then cutting the samples to the generator's measured window.
//!
//! CPU = sum of per-thread run time from /proc/<pid>/task/*/schedstat (ns resolution),
//! falling back to utime+stime from /proc/<pid>/stat (clock ticks) where schedstat is absent.

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

fn clk_tck() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn schedstat_cpu_us(pid: u32) -> Option<f64> {
    let mut total_ns: u64 = 0;
    let mut any = false;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat"))
            && let Some(ns) = s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
        {
            total_ns += ns;
            any = true;
        }
    }
    any.then_some(total_ns as f64 / 1000.0)
}

fn stat_cpu_us(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the ")" of comm: state is field 3; utime/stime are 14/15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ut: f64 = f.get(11)?.parse().ok()?;
    let st: f64 = f.get(12)?.parse().ok()?;
    Some((ut + st) / clk_tck() * 1e6)
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
    let (rss, hwm, threads) = status(pid)?;
    let cpu = schedstat_cpu_us(pid).or_else(|| stat_cpu_us(pid))?;
    Some(Sample {
        t_unix_us: now_unix_us(),
        cpu_us: cpu,
        rss_bytes: rss,
        hwm_bytes: hwm,
        threads,
    })
}

/// Sampling a whole process tree: the sum over its members of CPU, RSS and threads. A
/// member that exits keeps the CPU it had at its last sample, so the tree's CPU never runs
/// backwards (what it ran after that sample is lost: at most one interval's worth).
#[derive(Debug, Default)]
pub struct TreeSampler {
    tree: crate::process::Tree,
    last_cpu_us: std::collections::BTreeMap<u32, f64>,
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
            let Some(s) = sample(pid) else { continue };
            self.last_cpu_us.insert(pid, s.cpu_us);
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

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    pub fn start(pid: u32) -> Sampler {
        Sampler::start_tree(crate::process::Tree::new(pid, vec![]))
    }

    /// Samples a service's whole process tree ([`TreeSampler`]); for a service that is one
    /// process, that process exactly as [`sample`] reads it.
    pub fn start_tree(tree: crate::process::Tree) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut t = TreeSampler::new(tree);
            let mut out = Vec::new();
            while !s2.load(Ordering::Relaxed) {
                if let Some(s) = t.sample() {
                    out.push(s);
                }
                std::thread::sleep(Duration::from_millis(INTERVAL_MS));
            }
            if let Some(s) = t.sample() {
                out.push(s);
            }
            out
        });
        Sampler { stop, handle }
    }

    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// CPU time at `t` by linear interpolation between the neighbouring samples.
fn cpu_at(samples: &[Sample], t: u64) -> Option<f64> {
    let after = samples.iter().position(|s| s.t_unix_us >= t)?;
    if after == 0 {
        return (samples[0].t_unix_us == t).then_some(samples[0].cpu_us);
    }
    let (a, b) = (samples[after - 1], samples[after]);
    let span = (b.t_unix_us - a.t_unix_us) as f64;
    let frac = if span > 0.0 {
        (t - a.t_unix_us) as f64 / span
    } else {
        1.0
    };
    Some(a.cpu_us + (b.cpu_us - a.cpu_us) * frac)
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
    let cpu_us = match (cpu_at(samples, start_unix_us), cpu_at(samples, end)) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let rss: Vec<u64> = inside.iter().map(|s| s.rss_bytes).collect();
    ServerUsage {
        samples: inside.len() as u32,
        sample_interval_ms: INTERVAL_MS,
        cpu_us,
        cpu_us_per_request: cpu_us
            .filter(|_| responses > 0)
            .map(|c| c / responses as f64),
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
    fn window_outside_samples_gives_none() {
        let samples = vec![s(0, 0.0, 1), s(100, 10.0, 1)];
        assert_eq!(usage_in_window(&samples, 1_000_000, 1.0, 10).cpu_us, None);
    }

    #[test]
    fn samples_self() {
        let me = sample(std::process::id()).unwrap();
        assert!(me.rss_bytes > 0 && me.threads >= 1);
    }
}
