//! The exact-count window: syscalls per request of the server and of the generator, counted
//! over exact numbers of responses after the timed window (perf's tracepoint slows every
//! syscall, so it never runs inside a timed one).
//!
//! `perf stat -I 100 -e raw_syscalls:sys_enter -p <server>` is attached to the idle server;
//! the generator then makes two loads of N and 3N requests at the cell's own shape
//! (connections, pipelining, open-loop rate; no warm-up), each followed by an idle gap. The
//! server's count over a load is the difference of perf's cumulative totals at two points in
//! the idle gaps around it — whole intervals, nothing interpolated. The generator runs under
//! `perf stat -- loadgen`, its whole life counted. Per request is the slope
//! (S(3N) − S(N)) / (R(3N) − R(N)) over the responses R of each load: the connects, accepts
//! and closes of the cell's connections, the generator's start-up and report, and perf's
//! attach cancel. Beside it `perf record` of the same tracepoint keeps every server syscall's
//! number and time: split at the loads' starts and named, each load's sum must equal perf
//! stat's count of it, or the names are unmeasured.
//! N comes from the measured req/s, so the two loads together last about [`TARGET_S`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use loadgen::report::Counts;
use loadgen::{LoadModel, LoadSpec};

use super::SyscallWindow;
use super::perf;
use crate::limits::Confinement;
use crate::results::schema::{HardwareCounts, KernelCounts};
use crate::sample::now_unix_us;

/// How long the two loads (N + 3N requests) should take together at the measured rate (perf's
/// tracepoints slow the server, so they take longer). A count is a difference: what varies
/// with time cancels per request whatever N is, so half a second repeats as well as a whole
/// one did (CV of syscalls per request at c1 and c64 unchanged) and gives a gate back a minute.
pub const TARGET_S: f64 = 0.5;
/// The whole window, for the plan's time estimate: the loads, the idle gaps, perf's attach
/// and its detach (2.1 s a repetition at c1 and 3.2 s at c64 on the reference VM).
pub const ESTIMATE_MS: u64 = 2_500;
/// Bounds of N: enough requests that a per-connection cost is small beside them, few
/// enough that a fast service's window stays short.
pub const MIN_REQUESTS: u64 = 200;
pub const MAX_REQUESTS: u64 = 1_000_000;
/// Idle time after each load before the next step: perf prints at least two intervals in it.
const GAP: Duration = Duration::from_millis(300);
/// A load is closed by perf's first point arriving this long after the generator exited:
/// that point's 100 ms interval began after the exit, when the server had closed the
/// connections (a few ms) and was idle again.
const SETTLE_US: u64 = 120_000;
/// Time given to `perf record` to attach before the first load (it says nothing when it is
/// ready; the sum check catches a late attach).
const RECORD_ATTACH: Duration = Duration::from_millis(300);

/// The tracepoints' perf on `pids`, or (where it could not start) each event's reason: the
/// probe's where it refused the event, else why perf did not start.
fn kernel_events(pids: &str) -> Result<perf::Events, perf::EventTimeline> {
    let (events, refused) = perf::tracepoints().clone();
    perf::Events::start_with(perf::program(), pids, &events, refused.clone()).map_err(|u| {
        perf::EventTimeline {
            refused: perf::KERNEL_EVENTS
                .iter()
                .map(|e| {
                    let why = refused.get(*e).cloned().unwrap_or_else(|| u.0.clone());
                    ((*e).to_owned(), why)
                })
                .collect(),
            ..Default::default()
        }
    })
}

/// A scoped thread's value (its panic, passed on).
fn joined<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// N and 3N for a load measured at `req_per_s` (an open loop's own rate), rounded up to
/// whole rounds of the cell's connections × pipeline depth so every connection gets the
/// same share.
pub fn requests_for(spec: &LoadSpec, req_per_s: f64) -> (u64, u64) {
    let (rate, unit) = match spec.model {
        LoadModel::Open { rate_per_s, .. } => (rate_per_s, 1),
        LoadModel::Closed { .. } => (
            req_per_s,
            spec.connections() as u64 * spec.pipeline() as u64,
        ),
    };
    let n = if rate.is_finite() && rate > 0.0 {
        (rate * TARGET_S / 4.0) as u64
    } else {
        0
    };
    let n = n.clamp(MIN_REQUESTS, MAX_REQUESTS).div_ceil(unit.max(1)) * unit.max(1);
    (n, 3 * n)
}

/// The spec of one exact load: the cell's shape, `n` requests, no warm-up, no time bound.
pub fn exact_spec(spec: &LoadSpec, n: u64) -> LoadSpec {
    let mut s = spec.clone();
    s.requests = Some(n);
    s.duration_ms = None;
    s.warmup_ms = 0;
    s
}

/// Responses the generator received (any status), or why the load is not an exact count:
/// every request sent must have been answered.
pub fn answered(c: &Counts) -> Result<u64, String> {
    let got = c.ok + c.non_2xx + c.errors.status_mismatch + c.errors.body_mismatch;
    if got != c.sent || got == 0 {
        return Err(format!(
            "{got} of {} requests answered in the exact-count window",
            c.sent
        ));
    }
    Ok(got)
}

/// The server's syscalls over one load: perf's cumulative count at its first point arriving
/// [`SETTLE_US`] after the load ended, minus the count at its last point before the load
/// began.
pub fn over_load(points: &[(u64, f64)], before_us: u64, after_us: u64) -> Result<f64, String> {
    let a = points
        .iter()
        .rev()
        .find(|p| p.0 <= before_us)
        .ok_or("perf printed no count before the load")?;
    let b = points
        .iter()
        .find(|p| p.0 >= after_us + SETTLE_US)
        .ok_or("perf printed no count after the load settled")?;
    Ok(b.1 - a.1)
}

/// (S2 − S1, R2 − R1) of two (responses, syscalls) loads: the count the extra responses
/// cost, fixed costs cancelled; refused unless the second load is the larger.
pub fn difference(points: &[(u64, f64)]) -> Result<(f64, u64), String> {
    let [(r1, s1), (r2, s2)] = points else {
        return Err(format!("{} loads counted, not 2", points.len()));
    };
    if r2 <= r1 || s2 < s1 {
        return Err(format!(
            "the larger load did not count more ({r1} responses: {s1} syscalls, {r2}: {s2})"
        ));
    }
    Ok((s2 - s1, r2 - r1))
}

/// Syscalls by name, with their counts.
pub type Names = Vec<(String, u64)>;

/// Per-request syscalls by name from the two loads' recorded names (checked: each sums
/// to perf stat's count of its load within 0.2 %), largest first; names the larger load did
/// not add to are left out.
pub fn names_per_request(loads: &[(u64, f64, Names)]) -> Result<Vec<(String, f64)>, String> {
    let [(r1, s1, n1), (r2, s2, n2)] = loads else {
        return Err("not two loads named".into());
    };
    for (s, n) in [(s1, n1), (s2, n2)] {
        let sum: u64 = n.iter().map(|x| x.1).sum();
        if (sum as f64 - s).abs() > (s * 0.002).max(2.0) {
            return Err(format!(
                "perf record saw {sum} syscalls where perf stat counted {s} (attached late or lost events)"
            ));
        }
    }
    if r2 <= r1 {
        return Err("the larger load had no more responses".into());
    }
    let first = |name: &str| n1.iter().find(|x| x.0 == name).map_or(0, |x| x.1);
    let mut v: Vec<(String, f64)> = n2
        .iter()
        .map(|(name, c2)| {
            let d = *c2 as f64 - first(name) as f64;
            (name.clone(), d / (r2 - r1) as f64)
        })
        .filter(|x| x.1 > 0.0)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(v)
}

/// One exact load's outcome, its times on the clock of the host that ran it (a multi-host
/// cell's runner moves them onto the server's clock).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Load {
    pub before_us: u64,
    pub after_us: u64,
    pub responses: Result<u64, String>,
    pub loadgen: Result<f64, String>,
    /// The generator's kernel events over its life, by tracepoint ([`perf::KERNEL_EVENTS`]
    /// its host's perf could count), and why the others were not.
    #[serde(default)]
    pub loadgen_kernel: BTreeMap<String, f64>,
    #[serde(default)]
    pub loadgen_kernel_refused: BTreeMap<String, String>,
}

/// Syscalls by name of each load: the recorded calls from its start to the next load's
/// start (the server idle in between), largest first.
pub fn split_by_load(calls: &[(u64, u64)], starts_mono_us: &[u64]) -> Result<Vec<Names>, String> {
    let mut out = Vec::new();
    for (k, &start) in starts_mono_us.iter().enumerate() {
        let end = starts_mono_us.get(k + 1).copied().unwrap_or(u64::MAX);
        let mut by: std::collections::BTreeMap<String, u64> = Default::default();
        for (_, nr) in calls.iter().filter(|c| c.0 >= start && c.0 < end) {
            *by.entry(perf::syscall_name(*nr)?).or_default() += 1;
        }
        let mut v: Vec<(String, u64)> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out.push(v);
    }
    Ok(out)
}

/// perf attached to the server's processes for the window: `perf stat` of the syscall
/// tracepoint, `perf record` of it (names) and the hardware counters' own perf. Started and
/// finished where the service runs (this process, or a host's agent).
pub struct ServerCount {
    syscalls: perf::Syscalls,
    record: Result<perf::Record, perf::Unmeasured>,
    hardware: Result<perf::Hardware, perf::Unmeasured>,
    /// The tracepoints' perf, or (where it could not start) each event's reason.
    kernel: Result<perf::Events, perf::EventTimeline>,
    /// (unix µs, CLOCK_MONOTONIC µs) at the start: perf record stamps on the monotonic clock.
    clocks: (u64, u64),
}

/// What perf counted on the server over the window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerCounted {
    /// perf stat's cumulative syscalls, (unix µs on arrival, count).
    pub points: Vec<(u64, f64)>,
    /// Syscalls by name of each load, or why not.
    pub names: Result<Vec<Names>, String>,
    pub hardware: Result<perf::HwTimeline, String>,
    /// The kernel's tracepoints over the window (absent from an older agent: none counted).
    #[serde(default)]
    pub kernel: perf::EventTimeline,
}

impl ServerCount {
    /// Attaches perf to `pids` (the service's whole process tree; perf counts them together)
    /// and waits for it to settle; `record_out` is perf record's scratch file.
    pub fn start(pids: &[u32], record_out: &Path) -> Result<ServerCount, String> {
        if pids.is_empty() {
            return Err("the service has no process left to count".into());
        }
        let pids = pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let record = perf::Record::start(&pids, record_out);
        // The three interval perfs attach side by side: each waits for its first interval
        // (about 150 ms), and one after another they cost a repetition half a second. On a VM
        // without a PMU the hardware one says so in its first interval and is gone before the
        // loads.
        let (syscalls, hardware, kernel) = std::thread::scope(|s| {
            let hardware = s.spawn(|| perf::Hardware::start_with(perf::program(), &pids));
            let kernel = s.spawn(|| kernel_events(&pids));
            let syscalls = perf::Syscalls::start(&pids);
            (syscalls, joined(hardware), joined(kernel))
        });
        let syscalls = syscalls.map_err(|u| u.0)?;
        std::thread::sleep(GAP.max(RECORD_ATTACH));
        Ok(ServerCount {
            syscalls,
            record,
            hardware,
            kernel,
            clocks: (now_unix_us(), crate::process::mono_ns() / 1000),
        })
    }

    /// Stops perf; the loads started at `starts_unix_us` (this host's clock).
    pub fn finish(self, starts_unix_us: &[u64]) -> ServerCounted {
        let hardware = self.hardware.map(perf::Hardware::finish).map_err(|u| u.0);
        let kernel = self.kernel.map_or_else(|tl| tl, perf::Events::finish);
        let points = self.syscalls.finish();
        let (unix0, mono0) = self.clocks;
        let starts: Vec<u64> = starts_unix_us
            .iter()
            .map(|t| (t + mono0).saturating_sub(unix0))
            .collect();
        let names = self
            .record
            .and_then(perf::Record::finish)
            .map_err(|u| u.0)
            .and_then(|calls| split_by_load(&calls, &starts));
        ServerCounted {
            points,
            names,
            hardware,
            kernel,
        }
    }
}

/// The N and 3N loads, each made by `load` (`one_load` here, or a generator host's agent);
/// stops after a load that failed or an interrupt.
pub fn loads(
    spec: &LoadSpec,
    req_per_s: f64,
    mut load: impl FnMut(&LoadSpec) -> Load,
) -> Vec<Load> {
    let (n1, n2) = requests_for(spec, req_per_s);
    let mut out = Vec::new();
    for n in [n1, n2] {
        let l = load(&exact_spec(spec, n));
        let failed = l.responses.is_err();
        out.push(l);
        if failed || crate::interrupt::requested() {
            break;
        }
    }
    out
}

/// Where the window's two halves run: perf on the server's processes and the exact loads
/// from a generator. [`Here`] on this host; a multi-host cell's runner asks the hosts' agents
/// (`host::rep`). [`window`] conducts either the same way.
pub trait Site {
    /// Attaches perf to the server's processes (`server_pids` where the service runs on
    /// this host); Err: why the window is unmeasured.
    fn count_start(&mut self, server_pids: &[u32]) -> Result<(), String>;
    /// One exact load, its times on the server's clock.
    fn load(&mut self, spec: &LoadSpec) -> Load;
    /// Stops perf; the loads started at `starts_unix_us` (the server's clock).
    fn count_end(&mut self, starts_unix_us: &[u64]) -> Result<ServerCounted, String>;
}

/// The server's half of a site, where the service runs: perf attached to its processes from
/// `start` to `end`. [`Here`] holds one; so does a server host's agent, which a multi-host
/// cell's site asks.
pub struct ServerHalf {
    /// perf record's scratch file.
    record_out: PathBuf,
    counting: Option<ServerCount>,
}

impl ServerHalf {
    pub fn new(record_out: PathBuf) -> ServerHalf {
        ServerHalf {
            record_out,
            counting: None,
        }
    }

    /// Attaches perf to `pids` (the service's whole process tree); Err: why not.
    pub fn start(&mut self, pids: &[u32]) -> Result<(), String> {
        self.counting = Some(ServerCount::start(pids, &self.record_out)?);
        Ok(())
    }

    /// Stops perf; the loads started at `starts_unix_us` (this host's clock).
    pub fn end(&mut self, starts_unix_us: &[u64]) -> Result<ServerCounted, String> {
        let c = self.counting.take().ok_or("not counting")?;
        Ok(c.finish(starts_unix_us))
    }
}

/// The window on this host: the server's processes counted here, the loads made by
/// `loadgen` confined by `conf`.
pub struct Here<'a> {
    loadgen: &'a Path,
    spec_file: &'a Path,
    conf: &'a Confinement,
    server: ServerHalf,
}

impl<'a> Here<'a> {
    pub fn new(loadgen: &'a Path, spec_file: &'a Path, conf: &'a Confinement) -> Here<'a> {
        Here {
            loadgen,
            spec_file,
            conf,
            server: ServerHalf::new(spec_file.with_extension("perf.data")),
        }
    }
}

impl Site for Here<'_> {
    fn count_start(&mut self, server_pids: &[u32]) -> Result<(), String> {
        self.server.start(server_pids)
    }

    fn load(&mut self, spec: &LoadSpec) -> Load {
        one_load(self.loadgen, spec, self.spec_file, self.conf)
    }

    fn count_end(&mut self, starts_unix_us: &[u64]) -> Result<ServerCounted, String> {
        self.server.end(starts_unix_us)
    }
}

/// Runs the exact-count window at `site` on the server's processes `server_pids`, for a cell
/// of `spec` whose timed window measured `req_per_s`.
pub fn window(
    site: &mut dyn Site,
    server_pids: &[u32],
    spec: &LoadSpec,
    req_per_s: f64,
) -> SyscallWindow {
    if let Err(why) = site.count_start(server_pids) {
        return SyscallWindow::unmeasured(why);
    }
    let loads = loads(spec, req_per_s, |s| site.load(s));
    let starts: Vec<u64> = loads.iter().map(|l| l.before_us).collect();
    match site.count_end(&starts) {
        Ok(counted) => tally(counted, &loads),
        Err(why) => SyscallWindow::unmeasured(why),
    }
}

impl HardwareCounts {
    /// No hardware counts, for `why`.
    pub fn unmeasured(why: impl Into<String>) -> HardwareCounts {
        HardwareCounts {
            unmeasured: Some(why.into()),
            ..Default::default()
        }
    }
}

/// The server's hardware counts over the loads, given as (responses, before, after unix µs):
/// each event cut at the same idle-gap points as the syscalls ([`over_load`]) and differenced
/// over the same responses ([`difference`]). An event perf refused, scaled or did not count
/// more in the larger load is `None`, its reason in `unmeasured`.
pub fn hardware(tl: &perf::HwTimeline, loads: &[(u64, u64, u64)]) -> HardwareCounts {
    let mut out = HardwareCounts::default();
    let mut why: Vec<String> = Vec::new();
    let mut per_event = [None; 3];
    let mut points: Vec<(u64, [Option<f64>; 3])> = loads.iter().map(|l| (l.0, [None; 3])).collect();
    for (i, event) in perf::HW_EVENTS.iter().enumerate() {
        if let Err(w) = &tl.events[i] {
            if !why.contains(w) {
                why.push(w.clone());
            }
            continue;
        }
        let pts: Vec<(u64, f64)> = tl.points.iter().map(|p| (p.0, p.1[i])).collect();
        let counted: Result<Vec<(u64, f64)>, String> = loads
            .iter()
            .map(|&(r, before, after)| Ok((r, over_load(&pts, before, after)?)))
            .collect();
        let d = counted.and_then(|c| {
            for (k, (_, n)) in c.iter().enumerate() {
                points[k].1[i] = Some(*n);
            }
            difference(&c)
        });
        match d {
            Ok((n, r)) => {
                per_event[i] = Some(n);
                out.responses = r;
            }
            Err(e) => why.push(format!("{event}: {e}")),
        }
    }
    [out.instructions_user, out.instructions_kernel, out.cycles] = per_event;
    out.points = points;
    out.unmeasured = (!why.is_empty()).then(|| why.join("; "));
    out
}

/// One exact load of `spec` from this host, the generator under `perf stat`, and the idle
/// gap after it.
pub fn one_load(loadgen_bin: &Path, spec: &LoadSpec, spec_file: &Path, conf: &Confinement) -> Load {
    let stat_out = spec_file.with_extension("perf.txt");
    let prefix = perf::stat_prefix(&stat_out);
    let before_us = now_unix_us();
    let run = crate::load::run_under(&prefix, loadgen_bin, spec, spec_file, conf, &mut |_| {});
    let after_us = now_unix_us();
    std::thread::sleep(GAP);
    let stat = std::fs::read_to_string(&stat_out);
    let _ = std::fs::remove_file(&stat_out);
    let (loadgen_kernel, loadgen_kernel_refused) = match &stat {
        Ok(text) => {
            let mut t = perf::totals(text);
            t.retain(|k, _| perf::KERNEL_EVENTS.contains(&k.as_str()));
            (t, perf::tracepoints().1.clone())
        }
        Err(_) => Default::default(),
    };
    let loadgen = match stat {
        Ok(text) => perf::total(&text).ok_or_else(|| {
            format!(
                "perf stat -- loadgen printed no count: {}",
                text.trim().lines().last().unwrap_or("")
            )
        }),
        Err(e) => Err(format!("perf stat -- loadgen wrote no count: {e}")),
    };
    Load {
        before_us,
        after_us,
        responses: run
            .map_err(|e| format!("exact-count window: {e}"))
            .and_then(|r| answered(&r.report.counts)),
        loadgen,
        loadgen_kernel,
        loadgen_kernel_refused,
    }
}

impl KernelCounts {
    /// Every [`perf::KERNEL_EVENTS`] unmeasured, for `why`.
    pub fn unmeasured(why: &str) -> KernelCounts {
        KernelCounts {
            unmeasured: perf::KERNEL_EVENTS
                .iter()
                .map(|e| ((*e).to_owned(), why.to_owned()))
                .collect(),
            ..Default::default()
        }
    }

    /// Records one tracepoint's (responses, count) loads: their difference, or why none.
    fn take(&mut self, event: &str, counted: Result<Vec<(u64, f64)>, String>) {
        let d = counted.and_then(|c| {
            self.points.insert(event.to_owned(), c.clone());
            match c[..] {
                [(_, s1), (_, s2)] if s2 < s1 => {
                    Err(format!("the larger load counted fewer ({s1}, then {s2})"))
                }
                _ => difference(&c),
            }
        });
        match d {
            Ok((n, r)) => {
                self.counts.insert(event.to_owned(), n);
                self.responses = r;
            }
            Err(e) => {
                self.unmeasured.insert(event.to_owned(), e);
            }
        }
    }
}

/// The server's kernel events over the loads, given as (responses, before, after unix µs):
/// each tracepoint cut at the same idle-gap points as the syscalls ([`over_load`]) and
/// differenced over the same responses ([`difference`]); one perf could not count reads
/// unmeasured with its reason.
pub fn kernel(tl: &perf::EventTimeline, loads: &[(u64, u64, u64)]) -> KernelCounts {
    let mut out = KernelCounts::default();
    for event in perf::KERNEL_EVENTS {
        let Some(i) = tl.events.iter().position(|e| e == event) else {
            let why = tl.refused.get(event).cloned();
            out.unmeasured.insert(
                event.to_owned(),
                why.unwrap_or_else(|| "not counted by the server's host".into()),
            );
            continue;
        };
        let pts: Vec<(u64, f64)> = tl.points.iter().map(|p| (p.0, p.1[i])).collect();
        let counted = loads
            .iter()
            .map(|&(r, before, after)| Ok((r, over_load(&pts, before, after)?)))
            .collect();
        out.take(event, counted);
    }
    out
}

/// The generator's kernel events: each tracepoint's whole-life counts of the loads (`perf
/// stat -- loadgen`), differenced over the same responses as the server's.
pub fn loadgen_kernel(loads: &[Load]) -> KernelCounts {
    let mut out = KernelCounts::default();
    for event in perf::KERNEL_EVENTS {
        let counted = loads
            .iter()
            .map(|l| {
                let r = l.responses.clone()?;
                match (l.loadgen_kernel.get(event), &l.loadgen) {
                    (Some(n), _) => Ok((r, *n)),
                    (None, Err(why)) => Err(why.clone()),
                    (None, Ok(_)) => Err(l
                        .loadgen_kernel_refused
                        .get(event)
                        .cloned()
                        .unwrap_or_else(|| "perf stat -- loadgen printed no count of it".into())),
                }
            })
            .collect();
        out.take(event, counted);
    }
    out
}

/// The window's result from what perf counted on the server and the loads (their times on
/// the server's clock).
pub fn tally(counted: ServerCounted, loads: &[Load]) -> SyscallWindow {
    let mut w = syscalls(&counted.points, loads, counted.names);
    let answered: Result<Vec<(u64, u64, u64)>, String> = loads
        .iter()
        .map(|l| Ok((l.responses.clone()?, l.before_us, l.after_us)))
        .collect();
    (w.server_kernel, w.loadgen_kernel) = match &answered {
        Ok(ls) => (kernel(&counted.kernel, ls), loadgen_kernel(loads)),
        Err(why) => (KernelCounts::unmeasured(why), KernelCounts::unmeasured(why)),
    };
    w.hardware = match counted.hardware {
        Ok(tl) => loads
            .iter()
            .map(|l| Ok((l.responses.clone()?, l.before_us, l.after_us)))
            .collect::<Result<Vec<_>, String>>()
            .map_or_else(HardwareCounts::unmeasured, |ls| hardware(&tl, &ls)),
        Err(why) => HardwareCounts::unmeasured(why),
    };
    w
}

/// The syscalls of the window from perf's server timeline and the loads.
fn syscalls(
    points: &[(u64, f64)],
    loads: &[Load],
    names: Result<Vec<Names>, String>,
) -> SyscallWindow {
    let mut server = Vec::new();
    let mut gen_pts = Vec::new();
    let mut gen_err = None;
    for l in loads {
        let r = match &l.responses {
            Ok(r) => *r,
            Err(e) => return SyscallWindow::unmeasured(e.clone()),
        };
        let s = match over_load(points, l.before_us, l.after_us) {
            Ok(s) => s,
            Err(e) => return SyscallWindow::unmeasured(e),
        };
        server.push((r, s));
        match &l.loadgen {
            Ok(g) => gen_pts.push((r, *g)),
            Err(e) => gen_err = gen_err.or(Some(e.clone())),
        }
    }
    let (server_n, responses) = match difference(&server) {
        Ok(d) => d,
        Err(e) => return SyscallWindow::unmeasured(e),
    };
    // The generator's difference is over the same responses.
    let loadgen = match gen_err {
        Some(e) => Err(e),
        None => difference(&gen_pts).map(|d| d.0),
    };
    let names = names.and_then(|by_load| {
        let named: Vec<(u64, f64, Names)> = server
            .iter()
            .zip(by_load)
            .map(|(&(r, s), n)| (r, s, n))
            .collect();
        names_per_request(&named)
    });
    SyscallWindow {
        server: Ok(server_n),
        loadgen,
        responses,
        server_points: server,
        loadgen_points: gen_pts,
        server_names: names,
        hardware: HardwareCounts::default(),
        server_kernel: KernelCounts::default(),
        loadgen_kernel: KernelCounts::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: LoadModel) -> LoadSpec {
        LoadSpec {
            url: "http://127.0.0.1:1/ping".into(),
            model,
            threads: 1,
            keepalive: true,
            duration_ms: Some(2000),
            requests: None,
            warmup_ms: 500,
            timeout_ms: 1000,
            expect_status: 200,
            expect_body_bytes: None,
            headers: vec![],
            io: Default::default(),
            protocol: Default::default(),
        }
    }

    #[test]
    fn n_follows_the_rate_in_whole_rounds_of_connections() {
        let c1 = spec(LoadModel::Closed {
            connections: 1,
            pipeline: 0,
        });
        assert_eq!(requests_for(&c1, 20_000.0), (2_500, 7_500));
        let c64 = spec(LoadModel::Closed {
            connections: 64,
            pipeline: 4,
        });
        let (n, n3) = requests_for(&c64, 100_000.0);
        assert_eq!((n % 256, n3), (0, 3 * n));
        assert!((12_500..12_756).contains(&n), "{n}");
        assert_eq!(requests_for(&c1, 10.0).0, MIN_REQUESTS, "slow: the floor");
        assert_eq!(requests_for(&c1, f64::NAN).0, MIN_REQUESTS);
        assert_eq!(requests_for(&c1, 1e12).0, MAX_REQUESTS);
        let open = spec(LoadModel::Open {
            rate_per_s: 20_000.0,
            connections: 64,
            coalesce_us: 20,
        });
        assert_eq!(requests_for(&open, 3.0).0, 2_500, "open loop: its own rate");
        let s = exact_spec(&c64, 300);
        assert_eq!(
            (s.requests, s.duration_ms, s.warmup_ms),
            (Some(300), None, 0)
        );
        assert!(s.validate().is_ok());
    }

    #[test]
    fn a_load_is_cut_at_whole_points_in_the_idle_gaps() {
        // perf's cumulative count, stamped on arrival every 100 ms (µs).
        let p = [
            (1_000_000, 0.0),
            (1_100_000, 0.0),
            (1_200_000, 500.0),
            (1_300_000, 3_000.0),
            (1_400_000, 3_010.0),
            (1_500_000, 3_010.0),
        ];
        // Load from 1.15 s to 1.28 s: the last point before is 1.1 s, the first 120 ms
        // after the end is 1.4 s (its interval began at 1.3 s, after the exit).
        assert_eq!(over_load(&p, 1_150_000, 1_280_000), Ok(3_010.0));
        assert!(over_load(&p, 900_000, 1_280_000).is_err(), "nothing before");
        assert!(
            over_load(&p, 1_150_000, 1_450_000).is_err(),
            "nothing after"
        );
    }

    #[test]
    fn the_slope_cancels_fixed_costs() {
        // 3 syscalls a request plus 40 for connect/close: 3.0 exactly.
        let pts = [(5_000, 15_040.0), (15_000, 45_040.0)];
        let (s, r) = difference(&pts).unwrap();
        assert_eq!(s / r as f64, 3.0);
        assert!(difference(&pts[..1]).is_err());
        assert!(difference(&[(5_000, 10.0), (5_000, 20.0)]).is_err());
        assert!(difference(&[(5_000, 30.0), (15_000, 20.0)]).is_err());
    }

    #[test]
    fn names_are_checked_against_the_count_and_differenced() {
        let n = |v: &[(&str, u64)]| v.iter().map(|(a, b)| (a.to_string(), *b)).collect();
        let loads = vec![
            (
                1_000,
                3_006.0,
                n(&[
                    ("read", 1_001),
                    ("write", 1_000),
                    ("epoll_wait", 1_001),
                    ("accept4", 2),
                    ("close", 2),
                ]),
            ),
            (
                3_000,
                9_006.0,
                n(&[
                    ("read", 3_001),
                    ("write", 3_000),
                    ("epoll_wait", 3_001),
                    ("accept4", 2),
                    ("close", 2),
                ]),
            ),
        ];
        let v = names_per_request(&loads).unwrap();
        assert_eq!(
            v,
            vec![
                ("epoll_wait".to_owned(), 1.0),
                ("read".to_owned(), 1.0),
                ("write".to_owned(), 1.0)
            ],
            "per-connection costs cancel, ties by name"
        );
        let mut late = loads.clone();
        late[1].1 = 9_506.0;
        assert!(
            names_per_request(&late)
                .unwrap_err()
                .contains("attached late")
        );
    }

    #[test]
    fn recorded_calls_are_split_at_the_loads_starts() {
        let calls = [
            (5, 0),
            (10, 0),
            (11, 1),
            (12, 1),
            (20, 0),
            (21, 1),
            (22, 1),
            (30, 3),
        ];
        let by = split_by_load(&calls, &[10, 20]);
        if cfg!(target_arch = "x86_64") {
            let by = by.unwrap();
            assert_eq!(by[0], vec![("write".to_owned(), 2), ("read".to_owned(), 1)]);
            assert_eq!(
                by[1],
                vec![
                    ("write".to_owned(), 2),
                    ("close".to_owned(), 1),
                    ("read".to_owned(), 1)
                ],
                "the last load runs to the end; before the first is left out"
            );
        } else {
            assert!(by.unwrap_err().contains("no syscall name table"));
        }
    }

    /// The server's tracepoints cut at the loads' idle-gap points and differenced, the
    /// generator's whole-life counts differenced; a tracepoint that one side could not count
    /// is unmeasured with its reason on that side, never 0.
    #[test]
    fn kernel_events_are_the_loads_difference_per_request_or_unmeasured() {
        let xmit = "net:net_dev_xmit";
        let uring = "io_uring:io_uring_submit_req";
        // Cumulative counts every 100 ms (µs): loads of 1,000 and 3,000 responses, one packet
        // and two submissions each, plus 7 packets of connects and closes per load.
        let tl = perf::EventTimeline {
            events: vec![xmit.to_owned(), uring.to_owned()],
            points: vec![
                (1_000_000, vec![0.0, 0.0]),
                (1_100_000, vec![0.0, 0.0]),
                (1_300_000, vec![1_007.0, 2_000.0]),
                (1_400_000, vec![1_007.0, 2_000.0]),
                (1_500_000, vec![1_007.0, 2_000.0]),
                (1_700_000, vec![4_014.0, 8_000.0]),
                (1_800_000, vec![4_014.0, 8_000.0]),
            ],
            refused: [(
                "sock:sock_send_length".to_owned(),
                "unknown tracepoint".to_owned(),
            )]
            .into(),
        };
        let loads = [(1_000, 1_150_000, 1_160_000), (3_000, 1_450_000, 1_460_000)];
        let k = kernel(&tl, &loads);
        assert_eq!(k.responses, 2_000);
        assert_eq!(k.per_request(xmit), Some(1.0), "{k:?}");
        assert_eq!(k.per_request(uring), Some(2.0), "{k:?}");
        assert_eq!(k.points[xmit], vec![(1_000, 1_007.0), (3_000, 3_007.0)]);
        assert_eq!(k.unmeasured["sock:sock_send_length"], "unknown tracepoint");
        assert_eq!(k.per_request("sock:sock_send_length"), None);
        assert_eq!(
            k.unmeasured.len() + k.counts.len(),
            perf::KERNEL_EVENTS.len(),
            "every tracepoint counted or said why not: {k:?}"
        );

        let load = |r: u64, n: f64| Load {
            before_us: 0,
            after_us: 0,
            responses: Ok(r),
            loadgen: Ok(0.0),
            loadgen_kernel: [(xmit.to_owned(), n)].into(),
            loadgen_kernel_refused: [(uring.to_owned(), "perf refused".to_owned())].into(),
        };
        let g = loadgen_kernel(&[load(1_000, 1_050.0), load(3_000, 3_050.0)]);
        assert_eq!(g.per_request(xmit), Some(1.0), "{g:?}");
        assert_eq!(g.unmeasured[uring], "perf refused");
        let mut fewer = [load(1_000, 1_050.0), load(3_000, 50.0)];
        assert!(loadgen_kernel(&fewer).unmeasured[xmit].contains("counted fewer"));
        fewer[1].loadgen = Err("perf stat -- loadgen wrote no count".into());
        fewer[1].loadgen_kernel.clear();
        assert!(loadgen_kernel(&fewer).unmeasured[xmit].contains("wrote no count"));
        let none = KernelCounts::unmeasured("perf denied");
        assert!(none.counts.is_empty() && none.unmeasured.values().all(|w| w == "perf denied"));
    }

    #[test]
    fn a_load_with_unanswered_requests_is_not_exact() {
        let mut c = Counts {
            sent: 10,
            ok: 8,
            non_2xx: 2,
            ..Default::default()
        };
        assert_eq!(
            answered(&c),
            Ok(10),
            "any status is a response the server made"
        );
        c.non_2xx = 1;
        c.timeouts = 1;
        assert!(answered(&c).unwrap_err().contains("9 of 10"));
        assert!(answered(&Counts::default()).is_err(), "nothing sent");
    }
}
