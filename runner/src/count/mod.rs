//! Counted cost: the kernel's counts for a process over a repetition's measured window —
//! syscalls (`perf`), context switches, page faults and user/system CPU (`/proc`) — read
//! while the load runs and cut to the generator's window afterwards, for the service and for
//! the generator alike. Counts are exact where times are noisy: they rank services on a busy
//! machine. Instructions per request under Valgrind (`--count-instructions`): [`valgrind`].

pub mod perf;
pub mod proc;
pub mod timeline;
pub mod valgrind;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::results::schema::{ProcessCounts, RepCounts};

/// How often /proc is read.
pub const INTERVAL_MS: u64 = 50;

/// Counting one process: a /proc reader thread and, where perf may, `perf stat`.
pub struct Counter {
    stop: Arc<AtomicBool>,
    reads: JoinHandle<Vec<proc::ProcRead>>,
    syscalls: Result<perf::Syscalls, perf::Unmeasured>,
}

/// What was read while counting.
pub struct Timeline {
    reads: Vec<proc::ProcRead>,
    syscalls: Result<Vec<(u64, f64)>, perf::Unmeasured>,
}

impl Counter {
    /// Starts counting `pid` with perf's syscall count too; returns once perf counts (or has
    /// said why it cannot). perf slows every syscall on the machine: never in a timed window.
    pub fn start(pid: u32) -> Counter {
        Counter::start_with(pid, perf::Syscalls::start(pid))
    }

    /// Starts counting `pid` from /proc only (cheap: reads on the runner's CPU).
    pub fn start_proc(pid: u32) -> Counter {
        Counter::start_with(
            pid,
            Err(perf::Unmeasured("not counted in this window".into())),
        )
    }

    /// Starts the /proc reads beside `syscalls` (a started perf, or why there is none).
    pub fn start_with(pid: u32, syscalls: Result<perf::Syscalls, perf::Unmeasured>) -> Counter {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        // The first read before returning: the window cannot start before it.
        let first = proc::read(pid);
        let reads = std::thread::spawn(move || {
            let mut out: Vec<proc::ProcRead> = first.into_iter().collect();
            while !s2.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(INTERVAL_MS));
                out.extend(proc::read(pid));
            }
            out.extend(proc::read(pid));
            out
        });
        Counter {
            stop,
            reads,
            syscalls,
        }
    }

    /// Stops counting; everything read.
    pub fn finish(self) -> Timeline {
        self.stop.store(true, Ordering::Relaxed);
        let syscalls = self.syscalls.map(perf::Syscalls::finish);
        Timeline {
            reads: self.reads.join().unwrap_or_default(),
            syscalls,
        }
    }
}

impl Timeline {
    /// The counts over [start, start + window_s] with `responses` completed in it.
    pub fn window(&self, start_unix_us: u64, window_s: f64, responses: u64) -> ProcessCounts {
        let end = start_unix_us + (window_s * 1e6) as u64;
        let d = |f: fn(&proc::ProcRead) -> f64| {
            let pts: Vec<(u64, f64)> = self.reads.iter().map(|r| (r.t_unix_us, f(r))).collect();
            timeline::delta(&pts, start_unix_us, end)
        };
        let (syscalls, syscalls_unmeasured) = match &self.syscalls {
            Ok(pts) => match timeline::delta(pts, start_unix_us, end) {
                Some(n) => (Some(n), None),
                None => (
                    None,
                    Some("perf's counts do not cover the window".to_owned()),
                ),
            },
            Err(u) => (None, Some(u.0.clone())),
        };
        ProcessCounts {
            responses,
            syscalls,
            syscalls_unmeasured,
            voluntary_ctx_switches: d(|r| r.voluntary_ctx_switches as f64),
            involuntary_ctx_switches: d(|r| r.involuntary_ctx_switches as f64),
            minor_faults: d(|r| r.minor_faults as f64),
            major_faults: d(|r| r.major_faults as f64),
            user_us: d(|r| r.user_us),
            system_us: d(|r| r.system_us),
            syscall_window_responses: responses,
        }
    }
}

/// The syscall window's result: both processes' syscalls and the responses in it, or why
/// there is none.
pub struct SyscallWindow {
    pub server: Result<f64, String>,
    pub loadgen: Result<f64, String>,
    pub responses: u64,
}

impl SyscallWindow {
    /// No syscall window ran, for `why`.
    pub fn unmeasured(why: impl Into<String>) -> SyscallWindow {
        let why = why.into();
        SyscallWindow {
            server: Err(why.clone()),
            loadgen: Err(why),
            responses: 0,
        }
    }
}

fn with_syscalls(mut c: ProcessCounts, n: &Result<f64, String>, responses: u64) -> ProcessCounts {
    match n {
        Ok(_) if responses == 0 => {
            c.syscalls = None;
            c.syscalls_unmeasured = Some("no responses in the syscall window".into());
        }
        Ok(n) => {
            c.syscalls = Some(*n);
            c.syscalls_unmeasured = None;
            c.syscall_window_responses = responses;
        }
        Err(why) => {
            c.syscalls = None;
            c.syscalls_unmeasured = Some(why.clone());
        }
    }
    c
}

/// One repetition's counts: /proc counts from the measured window's timelines (a generator
/// that never started counts nothing), syscalls from the syscall window.
pub fn rep_counts(
    (server, loadgen): &(Timeline, Option<Timeline>),
    (start_unix_us, window_s, responses): (u64, f64, u64),
    sys: &SyscallWindow,
) -> RepCounts {
    let loadgen = loadgen.as_ref().map_or_else(
        || ProcessCounts {
            responses,
            ..Default::default()
        },
        |l| l.window(start_unix_us, window_s, responses),
    );
    RepCounts {
        server: with_syscalls(
            server.window(start_unix_us, window_s, responses),
            &sys.server,
            sys.responses,
        ),
        loadgen: with_syscalls(loadgen, &sys.loadgen, sys.responses),
        tool: tool(),
    }
}

/// The syscall window: the same load again for a short window, `perf stat` counting the
/// server's and the generator's syscalls in it.
pub fn syscall_window(
    loadgen_bin: &std::path::Path,
    spec: &loadgen::LoadSpec,
    spec_file: &std::path::Path,
    conf: &crate::limits::Confinement,
    server_pid: u32,
) -> SyscallWindow {
    let mut spec = spec.clone();
    spec.warmup_ms = spec.warmup_ms.min(SYSCALL_WARMUP_MS);
    spec.duration_ms = Some(SYSCALL_WINDOW_MS);
    let server = Counter::start(server_pid);
    if let Err(u) = &server.syscalls {
        let why = u.0.clone();
        drop(server.finish());
        return SyscallWindow::unmeasured(why);
    }
    let mut gen_counter = None;
    let run = crate::load::run_observed(loadgen_bin, &spec, spec_file, conf, &mut |pid| {
        gen_counter = Some(Counter::start(pid));
    });
    let (server, gen_tl) = (server.finish(), gen_counter.map(Counter::finish));
    let r = match run {
        Ok(r) => r.report,
        Err(e) => return SyscallWindow::unmeasured(format!("syscall window: {e}")),
    };
    let start = r.started_unix_ms * 1000;
    let responses = (r.requests_per_s * r.window_s).round() as u64;
    let pick = |t: &Timeline| -> Result<f64, String> {
        let c = t.window(start, r.window_s, responses);
        c.syscalls
            .ok_or_else(|| c.syscalls_unmeasured.unwrap_or_default())
    };
    SyscallWindow {
        server: pick(&server),
        loadgen: gen_tl
            .as_ref()
            .map_or_else(|| Err("the generator was not counted".into()), pick),
        responses,
    }
}

/// The syscall window's warm-up and length: counts per request settle fast.
pub const SYSCALL_WARMUP_MS: u64 = 200;
pub const SYSCALL_WINDOW_MS: u64 = 700;

/// How counts are taken here: perf's version and event, and /proc.
fn tool() -> String {
    static TOOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOOL.get_or_init(|| match perf_version() {
        Some(v) => format!(
            "{v} stat -e {} + /proc/<pid>/{{stat,task/*/status}}",
            perf::EVENT
        ),
        None => "/proc/<pid>/{stat,task/*/status} (no perf)".to_owned(),
    })
    .clone()
}

/// perf's version line (`perf version 6.1.187`), for the record of how counts were taken.
pub fn perf_version() -> Option<String> {
    let out = std::process::Command::new("perf")
        .arg("version")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Instant;

    const CHILD_ENV: &str = "PINGMATRIX_COUNT_CHILD";
    const SYSCALLS: u64 = 200_000;
    const PAGES: usize = 5_000;

    /// Run as a child (re-executed test binary): waits to be counted, then makes exactly
    /// `SYSCALLS` getppid calls and touches `PAGES` fresh pages, then waits again.
    #[test]
    fn synthetic_child() {
        if std::env::var_os(CHILD_ENV).is_none() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2000));
        for _ in 0..SYSCALLS {
            // SAFETY: getppid has no preconditions.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
        let mut v = vec![0u8; PAGES * 4096];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        std::thread::sleep(Duration::from_millis(2000));
    }

    #[test]
    fn counts_a_synthetic_process_with_known_syscalls_and_faults() {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "--exact",
                "count::tests::synthetic_child",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        let counter = Counter::start(child.id());
        let perf_ok = counter.syscalls.is_ok();
        let t0 = crate::sample::now_unix_us();
        assert!(
            started.elapsed() < Duration::from_millis(1900),
            "perf too slow to attach here"
        );
        std::thread::sleep(Duration::from_millis(2600) - started.elapsed());
        let t1 = crate::sample::now_unix_us();
        let timeline = counter.finish();
        child.wait().unwrap();
        let c = timeline.window(t0, (t1 - t0) as f64 / 1e6, 1000);
        let faults = c.minor_faults.unwrap();
        assert!(faults >= PAGES as f64, "{c:?}");
        assert!(faults < PAGES as f64 * 1.1 + 200.0, "{c:?}");
        if perf_ok {
            let n = c.syscalls.unwrap();
            // The loop plus the few the child makes around it (mmap, nanosleep, futex).
            assert!(n >= SYSCALLS as f64 && n < SYSCALLS as f64 * 1.01, "{c:?}");
            assert!((c.syscalls_per_request().unwrap() - 200.0).abs() < 2.0);
        } else {
            assert!(
                c.syscalls.is_none() && c.syscalls_unmeasured.is_some(),
                "{c:?}"
            );
        }
    }
}
