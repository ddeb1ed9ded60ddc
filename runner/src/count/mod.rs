//! Counted cost: the kernel's counts for a process over a repetition — context switches,
//! page faults and user/system CPU (`/proc`), read while the timed load runs and cut to the
//! generator's window afterwards; syscalls (`perf`) over exact request counts in their own
//! window after it ([`exact`]), with the kernel's tracepoints over the same loads
//! ([`perf::KERNEL_EVENTS`]: packets, sends, io_uring submissions …) — for the service and for
//! the generator alike. Counts are exact where times are noisy: they rank services on a busy
//! machine. Instructions per request under Valgrind (`--count-instructions`): [`valgrind`].

pub mod cachegrind;
pub mod exact;
pub mod perf;
pub mod proc;
pub mod syscall_names;
pub mod timeline;
pub mod valgrind;

use crate::results::schema::{HardwareCounts, KernelCounts, ProcessCounts, RepCounts};
use crate::sample::Poller;

/// Counting one process: a /proc [`Poller`] and, where perf may, `perf stat`.
pub struct Counter {
    reads: Poller<proc::ProcRead>,
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
        Counter::start_with(pid, Err(not_counted()))
    }

    /// Starts the /proc reads beside `syscalls` (a started perf, or why there is none).
    pub fn start_with(pid: u32, syscalls: Result<perf::Syscalls, perf::Unmeasured>) -> Counter {
        Counter {
            reads: Poller::start(move || proc::read(pid)),
            syscalls,
        }
    }

    /// Stops counting; everything read.
    pub fn finish(self) -> Timeline {
        let syscalls = self.syscalls.map(perf::Syscalls::finish);
        Timeline {
            reads: self.reads.finish(),
            syscalls,
        }
    }
}

fn not_counted() -> perf::Unmeasured {
    perf::Unmeasured("not counted in this window".into())
}

impl Timeline {
    /// A tree's /proc reads (a service's, polled with its samples: `observe`), no perf.
    pub fn of_reads(reads: Vec<proc::ProcRead>) -> Timeline {
        Timeline {
            reads,
            syscalls: Err(not_counted()),
        }
    }

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
            ..Default::default()
        }
    }
}

/// The syscall window's result: both processes' syscalls and the responses they were
/// counted over, or why there are none. From [`exact::window`], the counts are the
/// differences of two loads, listed in the points.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SyscallWindow {
    pub server: Result<f64, String>,
    pub loadgen: Result<f64, String>,
    pub responses: u64,
    /// (responses, syscalls) of each exact load; empty for a window cut from intervals.
    pub server_points: Vec<(u64, f64)>,
    pub loadgen_points: Vec<(u64, f64)>,
    /// The server's syscalls per request by name, largest first, or why not.
    pub server_names: Result<Vec<(String, f64)>, String>,
    /// The server's hardware counters over the same loads, or why not.
    pub hardware: HardwareCounts,
    /// Both processes' kernel tracepoints over the same loads, each counted or why not.
    pub server_kernel: KernelCounts,
    pub loadgen_kernel: KernelCounts,
}

impl SyscallWindow {
    /// No syscall window ran, for `why`.
    pub fn unmeasured(why: impl Into<String>) -> SyscallWindow {
        let why = why.into();
        SyscallWindow {
            server: Err(why.clone()),
            loadgen: Err(why.clone()),
            responses: 0,
            server_points: vec![],
            loadgen_points: vec![],
            server_names: Err(why.clone()),
            server_kernel: KernelCounts::unmeasured(&why),
            loadgen_kernel: KernelCounts::unmeasured(&why),
            hardware: HardwareCounts::unmeasured(why),
        }
    }
}

fn with_syscalls(
    mut c: ProcessCounts,
    n: &Result<f64, String>,
    responses: u64,
    points: &[(u64, f64)],
) -> ProcessCounts {
    c.syscall_points = points.to_vec();
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

/// One repetition's counts from the /proc counts already cut to the measured window (on
/// whichever hosts the processes ran) and the syscall window.
pub fn with_window(
    server: ProcessCounts,
    loadgen: ProcessCounts,
    sys: &SyscallWindow,
) -> RepCounts {
    let mut server = with_names(
        with_syscalls(server, &sys.server, sys.responses, &sys.server_points),
        &sys.server_names,
    );
    server.hardware = Some(sys.hardware.clone());
    server.kernel = Some(sys.server_kernel.clone());
    let mut loadgen = with_syscalls(loadgen, &sys.loadgen, sys.responses, &sys.loadgen_points);
    loadgen.kernel = Some(sys.loadgen_kernel.clone());
    RepCounts {
        server,
        loadgen,
        tool: tool(),
    }
}

/// The /proc counts of several generators (a multi-host cell's), added up: each counted
/// over its own host's window, with its own responses; a count any of them lacks is `None`.
pub fn sum_proc(parts: &[ProcessCounts]) -> ProcessCounts {
    let add = |f: fn(&ProcessCounts) -> Option<f64>| {
        let v: Option<Vec<f64>> = parts.iter().map(f).collect();
        v.filter(|v| !v.is_empty()).map(|v| v.iter().sum())
    };
    let responses = parts.iter().map(|p| p.responses).sum();
    ProcessCounts {
        responses,
        syscall_window_responses: responses,
        voluntary_ctx_switches: add(|p| p.voluntary_ctx_switches),
        involuntary_ctx_switches: add(|p| p.involuntary_ctx_switches),
        minor_faults: add(|p| p.minor_faults),
        major_faults: add(|p| p.major_faults),
        user_us: add(|p| p.user_us),
        system_us: add(|p| p.system_us),
        ..Default::default()
    }
}

fn with_names(mut c: ProcessCounts, names: &Result<Vec<(String, f64)>, String>) -> ProcessCounts {
    match names {
        Ok(v) => c.syscalls_by_name = v.clone(),
        Err(why) => c.syscalls_by_name_unmeasured = Some(why.clone()),
    }
    c
}

/// How counts are taken here: perf's version and event, and /proc.
fn tool() -> String {
    static TOOL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOOL.get_or_init(|| match perf_version() {
        Some(v) => format!(
            "{v} stat -e {} over two exact request counts (N, 3N; their difference) + perf record -e {} (names) + perf stat -e {} (kernel events, same loads) + /proc/<pid>/{{stat,task/*/status}}",
            perf::EVENT,
            perf::EVENT,
            perf::KERNEL_EVENTS.join(","),
        ),
        None => "/proc/<pid>/{stat,task/*/status} (no perf)".to_owned(),
    })
    .clone()
}

/// perf's version line (`perf version 6.1.187`), for the record of how counts were taken.
pub fn perf_version() -> Option<String> {
    let out = perf::command(perf::program())
        .arg("version")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Writes an executable stand-in program (a fake `perf`) at `path` for a test. A child
/// process (`install`) writes it, never a descriptor of this process: the test binary's other
/// threads fork, a forked child holds every open descriptor until it execs, and running a file
/// still open for writing fails with ETXTBSY ("Text file busy", seen in a full test run).
#[cfg(test)]
pub(crate) fn stand_in(path: &std::path::Path, script: &str) {
    let text = path.with_extension("txt");
    std::fs::write(&text, script).unwrap();
    let installed = std::process::Command::new("install")
        .args(["-m", "755"])
        .arg(&text)
        .arg(path)
        .status()
        .unwrap();
    assert!(installed.success(), "install {}", path.display());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::time::Duration;
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

    /// The hardware path through a stand-in perf (what `$PINGMATRIX_PERF` names): it prints,
    /// every 100 ms on its real clock, each event's increase of the cumulative counts in a
    /// file the test writes — a load "runs" by raising them. Two loads of 1,000 and 3,000
    /// responses costing 5,000 user and 12,000 kernel instructions and 40,000 cycles each,
    /// plus a fixed cost per load (connects, accepts): per request exactly those, the fixed
    /// costs cancelled.
    #[test]
    fn hardware_counts_through_a_stand_in_perf_are_the_loads_difference_per_request() {
        let dir = std::env::temp_dir().join(format!("count-hw-standin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let counts = dir.join("counts");
        std::fs::write(&counts, "0 0 0\n").unwrap();
        let fake = dir.join("perf");
        stand_in(
            &fake,
            &format!(
                r#"#!/bin/sh
# perf stat -x, -I 100 -e instructions:u,instructions:k,cycles -p <pid>, standing in.
start=$(date +%s%N); pu=0; pk=0; pc=0
while :; do
  sleep 0.1
  read u k c < {counts}
  t=$(( ($(date +%s%N) - start) / 1000 ))
  ts=$(printf '%d.%06d' $((t / 1000000)) $((t % 1000000)))
  echo "$ts,$((u - pu)),,instructions:u,100000,100.00,," >&2
  echo "$ts,$((k - pk)),,instructions:k,100000,100.00,," >&2
  echo "$ts,$((c - pc)),,cycles,100000,100.00,," >&2
  pu=$u; pk=$k; pc=$c
done
"#,
                counts = counts.display()
            ),
        );
        let set = |v: [u64; 3]| {
            let tmp = dir.join("counts.tmp");
            std::fs::write(&tmp, format!("{} {} {}\n", v[0], v[1], v[2])).unwrap();
            std::fs::rename(&tmp, &counts).unwrap();
        };
        let hw = perf::Hardware::start_with(&fake, std::process::id()).expect("counting");
        std::thread::sleep(Duration::from_millis(300));
        let per = [5_000, 12_000, 40_000];
        let fixed = [777, 5_555, 9_999];
        let mut cum = [0u64; 3];
        let mut loads = Vec::new();
        for responses in [1_000u64, 3_000] {
            let before = crate::sample::now_unix_us();
            for i in 0..3 {
                cum[i] += responses * per[i] + fixed[i];
            }
            set(cum);
            let after = crate::sample::now_unix_us();
            std::thread::sleep(Duration::from_millis(400));
            loads.push((responses, before, after));
        }
        let tl = hw.finish();
        let _ = std::fs::remove_dir_all(&dir);
        let h = exact::hardware(&tl, &loads);
        assert_eq!(h.unmeasured, None, "{h:?}");
        assert_eq!(h.responses, 2_000, "{h:?}");
        assert_eq!(h.instructions_user_per_request(), Some(5_000.0), "{h:?}");
        assert_eq!(h.instructions_kernel_per_request(), Some(12_000.0), "{h:?}");
        assert_eq!(h.cycles_per_request(), Some(40_000.0), "{h:?}");
        assert_eq!(
            h.points[1],
            (
                3_000,
                [Some(15_000_777.0), Some(36_005_555.0), Some(120_009_999.0)]
            )
        );
    }

    /// The same path where perf refuses an event (here the kernel's instructions): that one
    /// unmeasured with perf's words, never 0; the others counted.
    #[test]
    fn hardware_counts_read_unmeasured_where_perf_cannot_count_them() {
        let k = perf::no_hardware_counters("instructions:k <not supported>");
        // Cumulative counts every 100 ms (µs): loads of 1,000 and 3,000 responses.
        let tl = perf::HwTimeline {
            points: vec![
                (1_000_000, [0.0, 0.0, 0.0]),
                (1_100_000, [0.0, 0.0, 0.0]),
                (1_200_000, [2_000.0, 0.0, 5_000.0]),
                (1_300_000, [2_000.0, 0.0, 5_000.0]),
                (1_400_000, [2_000.0, 0.0, 5_000.0]),
                (1_500_000, [8_000.0, 0.0, 20_000.0]),
                (1_600_000, [8_000.0, 0.0, 20_000.0]),
                (1_700_000, [8_000.0, 0.0, 20_000.0]),
            ],
            events: [Ok(()), Err(k.clone()), Ok(())],
        };
        let loads = [(1_000, 1_150_000, 1_160_000), (3_000, 1_450_000, 1_460_000)];
        let h = exact::hardware(&tl, &loads);
        assert_eq!(h.instructions_user_per_request(), Some(2.0), "{h:?}");
        assert_eq!(h.instructions_kernel, None, "{h:?}");
        assert_eq!(h.cycles_per_request(), Some(5.0), "{h:?}");
        assert_eq!(h.unmeasured.as_deref(), Some(k.as_str()));
        assert_eq!(
            k,
            "no hardware counters (perf: instructions:k <not supported>)"
        );
        // Every event refused: start_with said so, and the window records it as it was.
        let u = HardwareCounts::unmeasured("no hardware counters (perf: <not supported>)");
        let json = serde_json::to_string(&u).unwrap();
        assert!(!json.contains("points"), "{json}");
        assert_eq!(serde_json::from_str::<HardwareCounts>(&json).unwrap(), u);
    }

    const BURST_ENV: &str = "PINGMATRIX_COUNT_BURSTS";

    /// Run as a child: for every byte on stdin, `n × 10,000` getppid calls (n the byte),
    /// then one byte back on stdout; blocked in read, idle, in between.
    #[test]
    fn burst_child() {
        use std::io::{Read, Write};
        if std::env::var_os(BURST_ENV).is_none() {
            return;
        }
        let (mut i, mut o) = (std::io::stdin().lock(), std::io::stdout().lock());
        let mut b = [0u8; 1];
        while i.read_exact(&mut b).is_ok() {
            for _ in 0..b[0] as u64 * 10_000 {
                // SAFETY: getppid has no preconditions.
                unsafe { libc::syscall(libc::SYS_getppid) };
            }
            if o.write_all(&b).and_then(|_| o.flush()).is_err() {
                break;
            }
        }
    }

    /// The exact count on a real process: perf attached to an idle child that makes 10,000
    /// and then 30,000 syscalls on request; each burst cut at perf's points in the idle gaps
    /// around it, the difference of the two exactly 20,000 (the read and write that start and
    /// end each burst cancel), and `perf record` names them.
    #[test]
    fn exact_count_of_two_bursts_between_idle_gaps() {
        use std::io::{Read, Write};
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args(["--exact", "count::tests::burst_child", "--test-threads=1"])
            .env(BURST_ENV, "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let (mut to, mut from) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        // Let the test harness start and block in read: idle from here.
        std::thread::sleep(Duration::from_millis(500));
        let dir = std::env::temp_dir().join(format!("count-bursts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record = perf::Record::start(child.id(), &dir.join("perf.data"));
        let server = match perf::Syscalls::start(child.id()) {
            Ok(s) => s,
            Err(u) => {
                eprintln!("skipped: perf cannot count here: {}", u.0);
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
        };
        std::thread::sleep(Duration::from_millis(300));
        let mut loads = Vec::new();
        for n in [1u8, 3] {
            let mono = crate::process::mono_ns() / 1000;
            let before = crate::sample::now_unix_us();
            to.write_all(&[n]).unwrap();
            let mut b = [0u8; 1];
            from.read_exact(&mut b).unwrap();
            let after = crate::sample::now_unix_us();
            std::thread::sleep(Duration::from_millis(300));
            loads.push((n, before, after, mono));
        }
        let points = server.finish();
        let calls = record
            .map_err(|u| u.0)
            .and_then(|r| r.finish().map_err(|u| u.0));
        drop(to);
        child.wait().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let counted: Vec<(u64, f64)> = loads
            .iter()
            .map(|(n, before, after, _)| {
                let s = exact::over_load(&points, *before, *after).unwrap();
                (*n as u64 * 10_000, s)
            })
            .collect();
        for (n, s) in &counted {
            assert!(*s >= *n as f64 && *s <= *n as f64 + 10.0, "{counted:?}");
        }
        let (d, r) = exact::difference(&counted).unwrap();
        assert_eq!((d, r), (20_000.0, 20_000), "{counted:?}");
        // The names come from a second perf (record + script): where it failed, the suite
        // reads "unmeasured" with this reason, and so does this test.
        let calls = match calls {
            Ok(c) => c,
            Err(why) => {
                eprintln!("names not checked: {why}");
                return;
            }
        };
        if cfg!(target_arch = "x86_64") {
            let starts: Vec<u64> = loads.iter().map(|l| l.3).collect();
            let by = exact::split_by_load(&calls, &starts).unwrap();
            match exact::names_per_request(&[
                (counted[0].0, counted[0].1, by[0].clone()),
                (counted[1].0, counted[1].1, by[1].clone()),
            ]) {
                Ok(named) => {
                    assert_eq!(named.len(), 1, "{by:?}");
                    assert_eq!(named[0].0, "getppid", "{by:?}");
                    // Within 1 %: once, on a full test run, perf record gave the second burst
                    // 30,051 getppid where perf stat counted 30,000 (1.0026 a request). The
                    // exact count is perf stat's; the names give its shares.
                    assert!((named[0].1 - 1.0).abs() < 0.01, "{by:?}");
                }
                // perf could not drain its buffer on a loaded machine: said, never wrong.
                Err(e) => assert!(e.contains("lost events"), "{e}"),
            }
        }
    }
}
