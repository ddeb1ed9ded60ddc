//! Counting a process's syscalls with `perf stat -e raw_syscalls:sys_enter -p <pid> -I 100`:
//! every thread, and threads started later by inheritance. perf prints one line per
//! interval on stderr, stamped with its own clock (seconds since it started); a reader thread
//! notes when each line arrived, and each point is placed at perf's time plus the smallest
//! arrival − perf-time offset seen — a line that arrives late (perf descheduled on a busy
//! machine) does not move its point, which a stamp on arrival would.
//!
//! Also here: [`total`], the count of a `perf stat -x, -o <file> -- <command>` run (a whole
//! process's life), and [`Record`], `perf record` of the same tracepoint: every syscall's
//! number and time, named by [`syscall_name`] (x86_64's table, generated).
//!
//! Refused (no perf, `perf_event_paranoid`, no tracefs) → [`Unmeasured`] with perf's own
//! words, and the run goes on.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sample::now_unix_us;

/// The syscall tracepoint: one event per syscall entry, whatever the syscall.
pub const EVENT: &str = "raw_syscalls:sys_enter";
/// perf's print interval.
const INTERVAL_MS: u64 = 100;
use crate::profile::PERF_READY_TIMEOUT as READY_TIMEOUT;

/// Why a count is missing, in words for results.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmeasured(pub String);

/// A running `perf stat`; [`Syscalls::finish`] stops it and returns its timeline.
pub struct Syscalls {
    child: Child,
    reader: Option<JoinHandle<Reading>>,
}

/// What perf printed: (arrival unix µs, perf's own time in µs, cumulative count) points,
/// and the rest of its words.
#[derive(Debug, Default)]
struct Reading {
    points: Vec<(u64, u64, f64)>,
    other: Vec<String>,
}

/// Perf's time (µs since it started) and count of one `-x,` interval line for [`EVENT`]:
/// `time,count,unit,event,...`.
fn parse_line(line: &str) -> Option<(u64, f64)> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 4 || f[3] != EVENT {
        return None;
    }
    let t_us = (f[0].trim().parse::<f64>().ok()? * 1e6).round() as u64;
    // "<not counted>": the counter never ran in the interval (every thread asleep), so no
    // syscall was entered.
    if f[1] == "<not counted>" {
        return Some((t_us, 0.0));
    }
    Some((t_us, f[1].parse::<f64>().ok()?))
}

/// (unix µs, cumulative count) points from (arrival, perf time, cumulative) ones: perf's
/// time shifted by the smallest arrival − perf-time offset, the arrival of the line that
/// came with the least delay.
pub fn place(points: &[(u64, u64, f64)]) -> Vec<(u64, f64)> {
    let Some(offset) = points.iter().map(|p| p.0 as i128 - p.1 as i128).min() else {
        return vec![];
    };
    points
        .iter()
        .map(|p| ((p.1 as i128 + offset).max(0) as u64, p.2))
        .collect()
}

fn read_lines(stderr: impl std::io::Read) -> Reading {
    let mut r = Reading::default();
    let mut total = 0.0;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        match parse_line(&line) {
            Some((t, n)) => {
                total += n;
                r.points.push((now_unix_us(), t, total));
            }
            None if !line.trim().is_empty() && r.other.len() < 5 => r.other.push(line),
            None => {}
        }
    }
    r
}

impl Syscalls {
    /// [`program`]; see [`Syscalls::start_with`].
    pub fn start(pid: impl std::fmt::Display) -> Result<Syscalls, Unmeasured> {
        Syscalls::start_with(program(), pid)
    }

    /// Attaches `program stat` to `pid` (one pid, or several comma-separated: counted
    /// together) and waits until it has printed its first interval (it is counting), or says
    /// why it cannot count.
    pub fn start_with(
        program: impl Into<PathBuf>,
        pid: impl std::fmt::Display,
    ) -> Result<Syscalls, Unmeasured> {
        let (child, stderr) = interval_stat(program, pid, EVENT)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            // The first point is sent as soon as it arrives; the rest is read to the end.
            let mut lines = BufReader::new(stderr);
            let mut first = String::new();
            let mut head = Reading::default();
            while lines.read_line(&mut first).is_ok_and(|n| n > 0) {
                if let Some((t, n)) = parse_line(&first) {
                    head.points.push((now_unix_us(), t, n));
                    break;
                }
                if head.other.len() < 5 && !first.trim().is_empty() {
                    head.other.push(first.trim().to_owned());
                }
                first.clear();
            }
            let _ = tx.send(!head.points.is_empty());
            let mut rest = read_lines(lines.into_inner());
            let base = head.points.last().map_or(0.0, |p| p.2);
            for p in &mut rest.points {
                p.2 += base;
            }
            head.points.append(&mut rest.points);
            head.other.append(&mut rest.other);
            head
        });
        let started = Instant::now();
        let counting = rx.recv_timeout(READY_TIMEOUT).unwrap_or(false);
        let mut s = Syscalls {
            child,
            reader: Some(reader),
        };
        if counting {
            return Ok(s);
        }
        let waited = started.elapsed();
        s.stop();
        let r = s
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let words = if r.other.is_empty() {
            format!("no count within {} ms", waited.as_millis())
        } else {
            r.other.join(" / ")
        };
        Err(Unmeasured(format!("perf stat -e {EVENT}: {words}")))
    }

    fn stop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SIGINT: perf prints its last interval and exits.
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() {
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stops perf; the (unix µs, cumulative syscalls) timeline it printed, placed by
    /// perf's own clock ([`place`]).
    pub fn finish(mut self) -> Vec<(u64, f64)> {
        self.stop();
        self.reader
            .take()
            .and_then(|h| h.join().ok())
            .map(|r| place(&r.points))
            .unwrap_or_default()
    }
}

impl Drop for Syscalls {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The hardware events counted beside the syscalls, in this order everywhere (the record's
/// definition: [`HardwareCounts`](crate::results::schema::HardwareCounts)).
pub use crate::results::schema::HW_EVENTS;

/// Which perf runs (`$PINGMATRIX_PERF`, else `perf` from PATH): one choice, in the profiler's
/// module (a leaf the data layer may use), for the counts and the profile alike.
pub use crate::profile::{PERF_ENV, perf_command as command, perf_program as program};

/// One `-x, -I` line of a [`HW_EVENTS`] event: perf's time (µs), the event's index, and its
/// count in the interval — `Ok((count, percent of the interval the counter ran))`, or perf's
/// word for why there is none (`<not supported>`). `<not counted>` is a count of 0: the
/// process slept the whole interval, so the counter never ran.
type HwLine = (u64, usize, Result<(f64, f64), String>);

fn parse_hw_line(line: &str) -> Option<HwLine> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 4 {
        return None;
    }
    let i = HW_EVENTS.iter().position(|e| *e == f[3])?;
    let t_us = (f[0].trim().parse::<f64>().ok()? * 1e6).round() as u64;
    let v = match f[1] {
        "<not counted>" => Ok((0.0, 100.0)),
        w if w.starts_with('<') => Err(w.to_owned()),
        n => Ok((
            n.parse::<f64>().ok()?,
            f.get(5).and_then(|p| p.parse().ok()).unwrap_or(100.0),
        )),
    };
    Some((t_us, i, v))
}

/// What the hardware perf printed, folded into whole intervals.
#[derive(Debug)]
struct HwReading {
    /// (arrival unix µs, perf time µs, cumulative count of each event).
    points: Vec<(u64, u64, [f64; 3])>,
    /// Per event: perf's word where it could not count it (`<not supported>`), or the least
    /// share of an interval the counter ran (below 100: multiplexed, the count scaled).
    refused: [Option<String>; 3],
    least_running: [f64; 3],
    other: Vec<String>,
}

impl Default for HwReading {
    fn default() -> HwReading {
        HwReading {
            points: vec![],
            refused: Default::default(),
            least_running: [100.0; 3],
            other: vec![],
        }
    }
}

impl HwReading {
    /// Folds one line in; true when it completed an interval (a point).
    fn take(&mut self, line: &str, cum: &mut [f64; 3], seen: &mut usize) -> bool {
        let Some((t, i, v)) = parse_hw_line(line) else {
            if !line.trim().is_empty() && self.other.len() < 5 {
                self.other.push(line.trim().to_owned());
            }
            return false;
        };
        match v {
            Ok((n, pct)) => {
                cum[i] += n;
                if n > 0.0 {
                    self.least_running[i] = self.least_running[i].min(pct);
                }
            }
            Err(w) => self.refused[i] = Some(w),
        }
        *seen += 1;
        if *seen < HW_EVENTS.len() {
            return false;
        }
        *seen = 0;
        self.points.push((now_unix_us(), t, *cum));
        true
    }
}

/// Where perf could count [`HW_EVENTS`]: each event's (unix µs, cumulative count) timeline
/// placed as [`place`] does, or why that event has none.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HwTimeline {
    pub points: Vec<(u64, [f64; 3])>,
    pub events: [Result<(), String>; 3],
}

/// A running `perf stat -x, -I 100 -e instructions:u,instructions:k,cycles -p <pid>`, its own
/// perf beside [`Syscalls`]' (whose invocation and counts it leaves as they were).
pub struct Hardware {
    child: Child,
    reader: Option<JoinHandle<HwReading>>,
}

/// The words for a machine whose perf cannot count hardware events.
pub fn no_hardware_counters(words: &str) -> String {
    format!("no hardware counters (perf: {words})")
}

/// `program stat -x, -I <interval> -e <events> -p <pid>`, its interval lines on the stderr
/// returned beside it: the one spawn of the per-interval counters (syscalls, hardware and
/// tracepoints).
fn interval_stat(
    program: impl Into<PathBuf>,
    pid: impl std::fmt::Display,
    events: &str,
) -> Result<(std::process::Child, std::process::ChildStderr), Unmeasured> {
    let program = program.into();
    let mut child = command(&program)
        .args([
            "stat",
            "-x",
            ",",
            "-I",
            &INTERVAL_MS.to_string(),
            "-e",
            events,
        ])
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Unmeasured(format!("cannot run {}: {e}", program.display())))?;
    let stderr = child.stderr.take().expect("piped");
    Ok((child, stderr))
}

impl Hardware {
    /// Attaches `program stat` to `pid` and waits for its first interval. Refused when perf
    /// cannot run, or when it counts none of the events (`<not supported>` on a VM without a
    /// PMU): then it is stopped at once.
    /// `pid`: one pid, or several joined by commas (a service's whole process tree).
    pub fn start_with(
        program: impl Into<PathBuf>,
        pid: impl std::fmt::Display,
    ) -> Result<Hardware, Unmeasured> {
        let events = HW_EVENTS.join(",");
        let (child, stderr) = interval_stat(program, pid, &events)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            let mut r = HwReading::default();
            let (mut cum, mut seen) = ([0.0; 3], 0);
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if r.take(&line, &mut cum, &mut seen)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(r.refused.clone());
                }
            }
            r
        });
        let started = Instant::now();
        let first = rx.recv_timeout(READY_TIMEOUT).ok();
        let mut h = Hardware {
            child,
            reader: Some(reader),
        };
        if let Some(refused) = &first
            && refused.iter().any(Option::is_none)
        {
            return Ok(h);
        }
        let waited = started.elapsed();
        stop_child(&mut h.child);
        let r = h.reader.take().and_then(|j| j.join().ok());
        Err(Unmeasured(match (first, r) {
            (Some(refused), _) => no_hardware_counters(&refused_words(&refused)),
            (None, Some(r)) if !r.other.is_empty() => {
                format!("perf stat -e {events}: {}", r.other.join(" / "))
            }
            _ => format!(
                "perf stat -e {events}: no count within {} ms",
                waited.as_millis()
            ),
        }))
    }

    /// Stops perf; each event's timeline, or why it has none.
    pub fn finish(mut self) -> HwTimeline {
        stop_child(&mut self.child);
        let r = self
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        timeline_of(&r)
    }
}

/// `instructions:u <not supported>, cycles <not supported>`.
fn refused_words(refused: &[Option<String>; 3]) -> String {
    HW_EVENTS
        .iter()
        .zip(refused)
        .filter_map(|(e, w)| w.as_ref().map(|w| format!("{e} {w}")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn timeline_of(r: &HwReading) -> HwTimeline {
    let placed: Vec<(u64, [f64; 3])> = {
        let offset = r.points.iter().map(|p| p.0 as i128 - p.1 as i128).min();
        r.points
            .iter()
            .map(|p| ((p.1 as i128 + offset.unwrap_or(0)).max(0) as u64, p.2))
            .collect()
    };
    let events = std::array::from_fn(|i| match (&r.refused[i], r.least_running[i]) {
        (Some(w), _) => Err(no_hardware_counters(&format!("{} {w}", HW_EVENTS[i]))),
        (None, pct) if pct < 100.0 => Err(format!(
            "{} multiplexed: its counter ran {pct:.2} % of an interval, so perf scaled the count",
            HW_EVENTS[i]
        )),
        (None, _) => Ok(()),
    });
    HwTimeline {
        points: placed,
        events,
    }
}

impl Drop for Hardware {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// SIGINT (perf prints its last interval and exits), killed after 5 s.
fn stop_child(child: &mut Child) {
    if child.try_wait().ok().flatten().is_none() {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The kernel's own work per request that the syscall count cannot see, each counted exactly
/// by a tracepoint (docs/counted-cost.md, "Kernel events", says which side of loopback each
/// lands on): packets handed to the device (loopback: one per TCP segment sent), sends and
/// receives at the socket layer, tasks woken, softirqs run (with `-p`, charged to the task
/// they interrupted), and io_uring submissions and completions (work that enters the kernel
/// through `io_uring_enter` or none at all, beyond the syscall count). A new tracepoint is a
/// row here: it is counted, recorded, summarized and shown by its name.
pub const KERNEL_EVENTS: [&str; 8] = [
    "net:net_dev_xmit",
    "sock:sock_send_length",
    "sock:sock_recv_length",
    "sched:sched_wakeup",
    "irq:softirq_entry",
    "io_uring:io_uring_submit_req",
    "io_uring:io_uring_complete",
    "tcp:tcp_probe",
];

/// Which [`KERNEL_EVENTS`] `program` can count on this host: those it can, and why each other
/// cannot (perf's words: an unknown tracepoint, or perf refused). One `perf stat -- true` for
/// the set, one per event only when the set is refused.
pub fn probe_tracepoints(
    program: &std::ffi::OsStr,
    events: &[&str],
) -> (Vec<String>, std::collections::BTreeMap<String, String>) {
    let try_events = |list: &str| -> Result<(), String> {
        let out = command(program)
            .args(["stat", "-x", ",", "-e", list, "--", "true"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
        if out.status.success() {
            return Ok(());
        }
        let words = String::from_utf8_lossy(&out.stderr);
        let why: Vec<&str> = words
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("Error") || l.contains("unknown tracepoint"))
            .collect();
        Err(format!(
            "perf stat -e {list}: {}",
            if why.is_empty() {
                words.trim().lines().next().unwrap_or("refused").to_owned()
            } else {
                why.join(" / ")
            }
        ))
    };
    let mut refused = std::collections::BTreeMap::new();
    if events.is_empty() || try_events(&events.join(",")).is_ok() {
        return (events.iter().map(|e| (*e).to_owned()).collect(), refused);
    }
    let mut ok = Vec::new();
    for e in events {
        match try_events(e) {
            Ok(()) => ok.push((*e).to_owned()),
            Err(why) => {
                refused.insert((*e).to_owned(), why);
            }
        }
    }
    (ok, refused)
}

/// [`probe_tracepoints`] of [`program`] and [`KERNEL_EVENTS`], once per process (the host
/// does not change under a run).
pub fn tracepoints() -> &'static (Vec<String>, std::collections::BTreeMap<String, String>) {
    static PROBED: std::sync::OnceLock<(Vec<String>, std::collections::BTreeMap<String, String>)> =
        std::sync::OnceLock::new();
    PROBED.get_or_init(|| probe_tracepoints(&program(), &KERNEL_EVENTS))
}

/// Cumulative counts of several events over time: (unix µs, count of each of `events`).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventTimeline {
    pub events: Vec<String>,
    pub points: Vec<(u64, Vec<f64>)>,
    /// Why the events [`KERNEL_EVENTS`] has and `events` lacks were not counted.
    #[serde(default)]
    pub refused: std::collections::BTreeMap<String, String>,
}

/// What the events' perf printed: (arrival unix µs, perf time µs, cumulative counts) points,
/// and up to five other lines (its words when it refused).
type EventsRead = (Vec<(u64, u64, Vec<f64>)>, Vec<String>);

/// A running `perf stat -x, -I 100 -e <tracepoints> -p <pid>`: its own perf beside
/// [`Syscalls`]' and [`Hardware`]'s (whose invocations and counts it leaves as they were).
pub struct Events {
    child: Child,
    reader: Option<JoinHandle<EventsRead>>,
    events: Vec<String>,
    refused: std::collections::BTreeMap<String, String>,
}

/// Folds one `-x, -I` line into the interval being read: the event's index and count (a
/// `<not counted>` interval is 0: every thread slept); `None` for other lines.
fn parse_event_line(line: &str, events: &[String]) -> Option<(u64, usize, f64)> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 4 {
        return None;
    }
    let i = events.iter().position(|e| e == f[3])?;
    let t_us = (f[0].trim().parse::<f64>().ok()? * 1e6).round() as u64;
    let n = match f[1] {
        "<not counted>" => 0.0,
        n => n.parse::<f64>().ok()?,
    };
    Some((t_us, i, n))
}

impl Events {
    /// Attaches `program stat` to `pid` (one, or several joined by commas) for `events` and
    /// waits for its first interval; `refused` (events not counted, and why) is carried into
    /// the timeline.
    pub fn start_with(
        program: impl Into<PathBuf>,
        pid: impl std::fmt::Display,
        events: &[String],
        refused: std::collections::BTreeMap<String, String>,
    ) -> Result<Events, Unmeasured> {
        if events.is_empty() {
            return Err(Unmeasured("no tracepoint to count".into()));
        }
        let list = events.join(",");
        let (child, stderr) = interval_stat(program, pid, &list)?;
        let (tx, rx) = std::sync::mpsc::channel();
        let names = events.to_vec();
        let reader = std::thread::spawn(move || {
            let (mut points, mut other) = (Vec::new(), Vec::new());
            let mut cum = vec![0.0; names.len()];
            let mut seen = 0;
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let Some((t, i, n)) = parse_event_line(&line, &names) else {
                    if !line.trim().is_empty() && other.len() < 5 {
                        other.push(line.trim().to_owned());
                    }
                    continue;
                };
                cum[i] += n;
                seen += 1;
                // perf prints every event of an interval before the next interval's.
                if seen == names.len() {
                    seen = 0;
                    points.push((now_unix_us(), t, cum.clone()));
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(());
                    }
                }
            }
            (points, other)
        });
        let started = Instant::now();
        let counting = rx.recv_timeout(READY_TIMEOUT).is_ok();
        let mut e = Events {
            child,
            reader: Some(reader),
            events: events.to_vec(),
            refused,
        };
        if counting {
            return Ok(e);
        }
        let waited = started.elapsed();
        stop_child(&mut e.child);
        let other = e
            .reader
            .take()
            .and_then(|j| j.join().ok())
            .map(|r| r.1)
            .unwrap_or_default();
        Err(Unmeasured(format!(
            "perf stat -e {list}: {}",
            if other.is_empty() {
                format!("no count within {} ms", waited.as_millis())
            } else {
                other.join(" / ")
            }
        )))
    }

    /// Stops perf; every event's cumulative timeline, placed by perf's own clock ([`place`]).
    pub fn finish(mut self) -> EventTimeline {
        stop_child(&mut self.child);
        let raw = self
            .reader
            .take()
            .and_then(|h| h.join().ok())
            .map(|r| r.0)
            .unwrap_or_default();
        let offset = raw.iter().map(|p| p.0 as i128 - p.1 as i128).min();
        EventTimeline {
            events: std::mem::take(&mut self.events),
            points: raw
                .into_iter()
                .map(|p| ((p.1 as i128 + offset.unwrap_or(0)).max(0) as u64, p.2))
                .collect(),
            refused: std::mem::take(&mut self.refused),
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Each event's count in the output of `perf stat -x, -o <file> -- <command>` (a whole
/// process's life), by name; events perf printed no number for are left out.
pub fn totals(text: &str) -> std::collections::BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            (f.len() >= 3)
                .then(|| Some((f[2].to_owned(), f[0].parse::<f64>().ok()?)))
                .flatten()
        })
        .collect()
}

/// The count of [`EVENT`] in the output of `perf stat -x, -o <file> -- <command>`
/// (`count,unit,event,...`, no time column); `None` if perf printed none.
pub fn total(text: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.trim().split(',').collect();
        (f.len() >= 3 && f[2] == EVENT)
            .then(|| f[0].parse::<f64>().ok())
            .flatten()
    })
}

/// The argv prefix that runs a command under `perf stat`, its count written to `out`.
pub fn stat_prefix(out: &std::path::Path) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = vec![program()];
    // The kernel's tracepoints this perf can count here beside the syscalls: one perf, one
    // life, each event its own line.
    let events: Vec<&str> = std::iter::once(EVENT)
        .chain(tracepoints().0.iter().map(String::as_str))
        .collect();
    v.extend(["stat", "-x", ",", "-e"].iter().map(Into::into));
    v.push(events.join(",").into());
    v.push("-o".into());
    v.push(out.as_os_str().to_owned());
    v.push("--".into());
    v
}

/// The name of syscall `nr` on the machine's architecture, or why there is none.
pub fn syscall_name(nr: u64) -> Result<String, String> {
    if cfg!(target_arch = "x86_64") {
        Ok(super::syscall_names::X86_64
            .get(nr as usize)
            .filter(|n| !n.is_empty())
            .map_or_else(|| format!("syscall_{nr}"), |n| (*n).to_owned()))
    } else {
        Err(format!(
            "no syscall name table for {}",
            std::env::consts::ARCH
        ))
    }
}

/// (CLOCK_MONOTONIC µs, syscall number) of each `perf script -F time,trace` line of a
/// `raw_syscalls:sys_enter` recording (`  1060.083793: NR 232 (3, 0, ...)`).
pub fn script_lines(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let (t, rest) = l.trim().split_once(':')?;
            let nr = rest.trim().strip_prefix("NR ")?.split_whitespace().next()?;
            let t_us = (t.trim().parse::<f64>().ok()? * 1e6).round() as u64;
            Some((t_us, nr.parse().ok()?))
        })
        .collect()
}

/// A running `perf record -k mono -e raw_syscalls:sys_enter -p <pid>`: every syscall of the
/// process with its number and CLOCK_MONOTONIC time, read back with `perf script` on
/// [`Record::finish`]. (Not `perf trace`: it attaches a BPF program to the same tracepoint,
/// and a tracepoint's BPF program decides for every perf event on it — with it running,
/// `perf stat`'s count fell by up to 75 % here, and its own by 10 %.)
pub struct Record {
    child: Child,
    out: PathBuf,
    program: std::ffi::OsString,
}

impl Record {
    /// Starts recording `pid` into `out`. perf record says nothing when it is ready: the
    /// caller waits, and checks the recording's count against `perf stat`'s.
    pub fn start(pid: impl std::fmt::Display, out: &std::path::Path) -> Result<Record, Unmeasured> {
        let program = program();
        let child = command(&program)
            .args([
                "record",
                "-q",
                "-k",
                "mono",
                "-e",
                EVENT,
                "-p",
                &pid.to_string(),
            ])
            .arg("-o")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Unmeasured(format!("cannot run perf record: {e}")))?;
        Ok(Record {
            child,
            out: out.to_owned(),
            program,
        })
    }

    /// Stops perf record (SIGINT: it writes its file) and reads the syscalls back.
    pub fn finish(mut self) -> Result<Vec<(u64, u64)>, Unmeasured> {
        let r = self.stop_and_read();
        let _ = std::fs::remove_file(&self.out);
        r
    }

    fn stop_and_read(&mut self) -> Result<Vec<(u64, u64)>, Unmeasured> {
        let early = self.child.try_wait().ok().flatten();
        if early.is_none() {
            // SAFETY: kill(2) on our own child's pid.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(st) = self.child.try_wait().ok().flatten() {
                break st;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(Unmeasured("perf record did not stop within 10 s".into()));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut words = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut words);
        }
        if early.is_some() || !self.out.exists() {
            return Err(Unmeasured(format!(
                "perf record exited ({status}): {}",
                words.trim().lines().take(2).collect::<Vec<_>>().join(" / ")
            )));
        }
        let out = command(&self.program)
            .args(["script", "-F", "time,trace", "-i"])
            .arg(&self.out)
            .output()
            .map_err(|e| Unmeasured(format!("cannot run perf script: {e}")))?;
        let calls = script_lines(&String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            return Err(Unmeasured(format!(
                "perf script failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(calls)
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_whole_run_total_script_lines_and_names() {
        let stat = "# started on Thu Dec  3 07:46:22 2026\n\n4279,,raw_syscalls:sys_enter,75481427,100.00,,\n";
        assert_eq!(total(stat), Some(4279.0));
        assert_eq!(total("# started\n"), None);
        let script = " 1060.083793: NR 288 (3, 0, 0, 80800, 0, 0)\n 1060.083810: NR 54 (5, 6, 1, 7f6d4cec425c, 4, 0)\nwarning: x\n";
        assert_eq!(
            script_lines(script),
            vec![(1_060_083_793, 288), (1_060_083_810, 54)]
        );
        if cfg!(target_arch = "x86_64") {
            let n = |nr| syscall_name(nr).unwrap();
            assert_eq!(
                [n(0), n(1), n(7), n(232), n(288), n(110)],
                ["read", "write", "poll", "epoll_wait", "accept4", "getppid"]
            );
            assert_eq!(n(426), "io_uring_enter");
            assert_eq!(n(455), "futex_wait");
            assert_eq!(n(9999), "syscall_9999");
        }
    }

    #[test]
    fn kernel_events_parse_per_interval_and_total_by_name() {
        let ev = vec![
            "net:net_dev_xmit".to_owned(),
            "sock:sock_send_length".to_owned(),
        ];
        assert_eq!(
            parse_event_line("     0.100234,2030,,net:net_dev_xmit,100210,100.00,,", &ev),
            Some((100_234, 0, 2030.0))
        );
        assert_eq!(
            parse_event_line("0.2,<not counted>,,sock:sock_send_length,0,100.00,,", &ev),
            Some((200_000, 1, 0.0)),
            "asleep the whole interval"
        );
        assert_eq!(
            parse_event_line("0.1,5,,raw_syscalls:sys_enter,1,100,,", &ev),
            None
        );
        let t = totals(
            "# started\n\n4279,,raw_syscalls:sys_enter,7,100.00,,\n1000,,net:net_dev_xmit,7,100.00,,\n<not supported>,,x:y,0,0,,\n",
        );
        assert_eq!(t.get("net:net_dev_xmit"), Some(&1000.0));
        assert_eq!(t.get("raw_syscalls:sys_enter"), Some(&4279.0));
        assert_eq!(t.len(), 2, "{t:?}");
    }

    /// Through a stand-in perf: a tracepoint this "kernel" lacks is refused in perf's words
    /// and the rest are counted, interval by interval, cumulatively; an absent perf refuses
    /// every event, never counting 0.
    #[test]
    fn tracepoints_are_probed_and_counted_through_a_stand_in_perf() {
        let dir = std::env::temp_dir().join(format!("count-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("perf");
        crate::count::stand_in(
            &fake,
            r#"#!/bin/sh
case "$*" in
  *no:such*) echo "event syntax error: 'no:such'" >&2; echo "                     \___ unknown tracepoint" >&2; exit 129;;
  *" -- true") exit 0;;
esac
i=0
while :; do
  sleep 0.1; i=$((i + 1))
  echo "0.$i,3,,net:net_dev_xmit,1,100.00,," >&2
  echo "0.$i,<not counted>,,sock:sock_send_length,0,100.00,," >&2
done
"#,
        );
        let (ok, refused) = probe_tracepoints(
            fake.as_os_str(),
            &["net:net_dev_xmit", "no:such", "sock:sock_send_length"],
        );
        assert_eq!(ok, ["net:net_dev_xmit", "sock:sock_send_length"]);
        assert!(
            refused["no:such"].contains("unknown tracepoint"),
            "{refused:?}"
        );
        let e = Events::start_with(&fake, std::process::id(), &ok, refused.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(350));
        let tl = e.finish();
        assert!(tl.points.len() >= 2, "{tl:?}");
        let last = tl.points.len() as f64;
        assert_eq!(tl.points.last().unwrap().1, vec![3.0 * last, 0.0]);
        assert!(tl.points.windows(2).all(|w| w[0].0 < w[1].0), "{tl:?}");
        assert_eq!(tl.refused, refused);
        let (ok, refused) =
            probe_tracepoints(dir.join("absent").as_os_str(), &["net:net_dev_xmit"]);
        assert!(ok.is_empty() && refused["net:net_dev_xmit"].contains("cannot run"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn parses_interval_lines_of_the_event_only() {
        assert_eq!(
            parse_line("     0.100234,2030,,raw_syscalls:sys_enter,100210,100.00,,"),
            Some((100_234, 2030.0))
        );
        assert_eq!(
            parse_line("0.1,<not counted>,,raw_syscalls:sys_enter,0,100.00,,"),
            Some((100_000, 0.0)),
            "asleep the whole interval"
        );
        assert_eq!(
            parse_line("0.1,<not supported>,,raw_syscalls:sys_enter,0,0,,"),
            None
        );
        assert_eq!(parse_line("0.1,5,,context-switches,1,100,,"), None);
        assert_eq!(parse_line("Error:"), None);
    }

    #[test]
    fn points_are_placed_by_perfs_clock_not_by_late_arrivals() {
        // Perf started at unix 1_000_000 µs; lines arrive 1 ms after their interval, except
        // the second, 300 ms late (perf descheduled): it keeps its place.
        let p = [
            (1_101_000, 100_000, 5.0),
            (1_500_000, 200_000, 9.0),
            (1_301_000, 300_000, 9.0),
        ];
        assert_eq!(
            place(&p),
            vec![(1_101_000, 5.0), (1_201_000, 9.0), (1_301_000, 9.0)]
        );
        assert!(place(&[]).is_empty());
    }

    #[test]
    fn hardware_lines_count_refuse_or_scale_per_event() {
        assert_eq!(
            parse_hw_line("     0.100180155,51234,,instructions:u,100210,100.00,,"),
            Some((100_180, 0, Ok((51_234.0, 100.0))))
        );
        assert_eq!(
            parse_hw_line("0.1,<not supported>,,instructions:k,0,100.00,,"),
            Some((100_000, 1, Err("<not supported>".into())))
        );
        assert_eq!(
            parse_hw_line("0.1,<not counted>,,cycles,0,0.00,,"),
            Some((100_000, 2, Ok((0.0, 100.0)))),
            "asleep the whole interval"
        );
        assert_eq!(
            parse_hw_line("0.2,9000,,cycles,50000,62.50,,"),
            Some((200_000, 2, Ok((9_000.0, 62.5))))
        );
        assert_eq!(parse_hw_line("0.1,5,,raw_syscalls:sys_enter,1,100,,"), None);
        assert_eq!(parse_hw_line("Error:"), None);

        // What perf prints on a VM without a PMU: every event refused, in perf's words.
        let mut r = HwReading::default();
        let (mut cum, mut seen) = ([0.0; 3], 0);
        let vm = "     0.100180155,<not supported>,,instructions:u,0,100.00,,\n     0.100180155,<not supported>,,instructions:k,0,100.00,,\n     0.100180155,<not supported>,,cycles,0,100.00,,";
        let done: Vec<bool> = vm.lines().map(|l| r.take(l, &mut cum, &mut seen)).collect();
        assert_eq!(done, [false, false, true], "a point per whole interval");
        assert_eq!(
            no_hardware_counters(&refused_words(&r.refused)),
            "no hardware counters (perf: instructions:u <not supported>, instructions:k <not supported>, cycles <not supported>)"
        );
        let tl = timeline_of(&r);
        assert!(tl.events.iter().all(|e| {
            e.as_ref()
                .unwrap_err()
                .starts_with("no hardware counters (perf: ")
        }));

        // Counted: cumulative per event; a scaled (multiplexed) count is not exact.
        let mut r = HwReading::default();
        let (mut cum, mut seen) = ([0.0; 3], 0);
        for l in [
            "0.1,100,,instructions:u,1,100.00,,",
            "0.1,<not counted>,,instructions:k,0,0.00,,",
            "0.1,300,,cycles,1,100.00,,",
            "0.2,50,,instructions:u,1,100.00,,",
            "0.2,200,,instructions:k,1,100.00,,",
            "0.2,400,,cycles,1,80.00,,",
        ] {
            r.take(l, &mut cum, &mut seen);
        }
        let tl = timeline_of(&r);
        let counts: Vec<[f64; 3]> = tl.points.iter().map(|p| p.1).collect();
        assert_eq!(counts, [[100.0, 0.0, 300.0], [150.0, 200.0, 700.0]]);
        assert!(tl.events[0].is_ok() && tl.events[1].is_ok());
        assert!(
            tl.events[2]
                .as_ref()
                .unwrap_err()
                .contains("cycles multiplexed"),
            "{:?}",
            tl.events
        );
    }

    #[test]
    fn a_perf_without_hardware_counters_is_stopped_and_says_so() {
        let dir = std::env::temp_dir().join(format!("count-hw-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("perf");
        // A VM's perf: every interval refuses every event, until interrupted.
        crate::count::stand_in(
            &fake,
            "#!/bin/sh\nwhile :; do sleep 0.1; for e in instructions:u instructions:k cycles; do echo \"     0.100180155,<not supported>,,$e,0,100.00,,\" >&2; done; done\n",
        );
        let started = Instant::now();
        let err = Hardware::start_with(&fake, std::process::id())
            .err()
            .unwrap();
        assert_eq!(
            err.0,
            "no hardware counters (perf: instructions:u <not supported>, instructions:k <not supported>, cycles <not supported>)"
        );
        assert!(
            started.elapsed() < Duration::from_secs(6),
            "stopped at once"
        );
        let err = Hardware::start_with(dir.join("absent"), 1).err().unwrap();
        assert!(err.0.contains("cannot run"), "{err:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_refusing_perf_is_unmeasured_with_its_words() {
        let dir = std::env::temp_dir().join(format!("count-perf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fake = dir.join("perf");
        crate::count::stand_in(
            &fake,
            "#!/bin/sh\necho 'Error: Access to performance monitoring and observability operations is limited.' >&2\necho 'Consider adjusting /proc/sys/kernel/perf_event_paranoid' >&2\nexit 255\n",
        );
        let err = Syscalls::start_with(&fake, std::process::id())
            .err()
            .unwrap();
        assert!(err.0.contains("perf_event_paranoid"), "{err:?}");
        let err = Syscalls::start_with(dir.join("absent"), 1).err().unwrap();
        assert!(err.0.contains("cannot run"), "{err:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
