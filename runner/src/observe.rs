//! The observers: what watches a repetition while its load runs and after it, then returns
//! its part of what it saw over the generator's measured window. One set, conducted the same
//! way on the runner's host (`cell`), on a server host (`agent`, which sends its observation
//! whole) and for a multi-host cell's syscall window (`host::rep`):
//!
//! - the service's process tree from /proc, one poller (CPU, RSS, threads: `sample`; context
//!   switches, faults, user and system CPU: `count`), and its cgroup's counters (`limits`);
//! - the generator from /proc, from the moment it runs ([`Generator`]);
//! - a profiler beside the load (`flamegraph`);
//! - after the timed load, the service still up: the exact syscall window ([`Syscalls`] —
//!   perf slows every syscall, so it has its own window after the timed one);
//! - the open loop's send lag against the machine's timer floor ([`FloorChecker`]);
//! - after the service stopped: Valgrind's instruction count on starts of its own
//!   ([`Instructions`]).
//!
//! Each member has a no-op default for the phases it does not watch (criterion's `Report`).

use std::path::Path;

use loadgen::LoadSpec;
use serde::{Deserialize, Serialize};

use crate::count::exact::{self, Site};
use crate::count::proc::{ProcRead, TreeReads};
use crate::count::{self, Counter, SyscallWindow, Timeline, valgrind};
use crate::limits::Confinement;
use crate::load::{self, LoadRun};
use crate::process::Tree;
use crate::results::outcome::StartOutcome;
use crate::results::schema::{
    CgroupCounters, FloorCheck, InstructionCount, ProcessCounts, RepResult, ServerUsage,
};
use crate::sample::{self, Poller, Sample};

/// The generator's measured window, on the clock of the host the service runs on, and the
/// responses completed in it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    pub start_unix_us: u64,
    pub secs: f64,
    pub responses: u64,
}

impl Window {
    /// The window a generator's report describes.
    pub fn of(r: &loadgen::Report) -> Window {
        Window {
            start_unix_us: r.started_unix_ms * 1000,
            secs: r.window_s,
            responses: (r.requests_per_s * r.window_s).round() as u64,
        }
    }

    /// The counts `t` read over this window.
    pub fn counts(&self, t: &Timeline) -> ProcessCounts {
        t.window(self.start_unix_us, self.secs, self.responses)
    }
}

/// What the set saw over one window: each member's part in its place (absent where no member
/// of the set watches it). An agent sends it whole.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Observation {
    pub usage: ServerUsage,
    pub counts: ProcessCounts,
    /// None when the service runs in no cgroup.
    pub cgroup: Option<CgroupCounters>,
    /// The generator's /proc counts over its window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadgen: Option<ProcessCounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<SyscallWindow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_check: Option<FloorCheck>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionCount>,
}

/// Why a repetition has no syscall window: the timed load before it did not complete.
const NOT_LOADED: &str = "the measured load did not complete";

/// One member's part of an [`Observation`].
pub enum Part {
    Nothing,
    Tree {
        usage: ServerUsage,
        counts: Option<ProcessCounts>,
    },
    Cgroup(Option<CgroupCounters>),
    Generator(ProcessCounts),
    Syscalls(SyscallWindow),
    FloorCheck(FloorCheck),
    Instructions(InstructionCount),
}

impl Observation {
    fn take(&mut self, part: Part) {
        match part {
            Part::Nothing => {}
            Part::Tree { usage, counts } => {
                self.usage = usage;
                if let Some(c) = counts {
                    self.counts = c;
                }
            }
            Part::Cgroup(c) => self.cgroup = c,
            Part::Generator(c) => self.loadgen = Some(c),
            Part::Syscalls(w) => self.syscalls = Some(w),
            Part::FloorCheck(f) => self.floor_check = Some(f),
            Part::Instructions(i) => self.instructions = Some(i),
        }
    }

    /// Repetition `rep` as recorded: the generator's `run` (its report the cell's, merged
    /// from `generators` on a multi-host cell) and what the set saw.
    pub fn rep(
        self,
        rep: u32,
        run: LoadRun,
        generators: Vec<crate::results::schema::GeneratorRun>,
    ) -> RepResult {
        // A generator that was not counted counts nothing.
        let loadgen = self.loadgen.unwrap_or_else(|| ProcessCounts {
            responses: self.counts.responses,
            ..Default::default()
        });
        let sys = self
            .syscalls
            .unwrap_or_else(|| SyscallWindow::unmeasured(NOT_LOADED));
        RepResult {
            rep,
            started_unix_ms: run.report.started_unix_ms,
            session: None,
            server: self.usage,
            cgroup: self.cgroup,
            loadgen_exit_code: run.exit_code,
            floor_check: self.floor_check,
            generators,
            counts: Some(count::with_window(self.counts, loadgen, &sys)),
            instructions: self.instructions,
            report: run.report,
        }
    }
}

/// One way of watching a repetition, made just before the load.
pub trait Observer {
    /// The generator is about to start against the service, whose main process is
    /// `server_pid`.
    fn load_starting(&mut self, _server_pid: u32) {}
    /// The generator runs as `pid`.
    fn generator_started(&mut self, _pid: u32) {}
    /// The load is over: the last reads (threads joined).
    fn stop(&mut self) {}
    /// The load completed with `report` and the service, as `server_pids`, is still up.
    fn load_complete(&mut self, _server_pids: &[u32], _report: &loadgen::Report) {}
    /// The service stopped, having told `told` as it started.
    fn service_stopped(&mut self, _told: &[StartOutcome]) {}
    /// Its part of what was seen over `w`.
    fn part(&mut self, _w: &Window) -> Part {
        Part::Nothing
    }
}

impl<T: Observer + ?Sized> Observer for &mut T {
    fn load_starting(&mut self, server_pid: u32) {
        (**self).load_starting(server_pid)
    }
    fn generator_started(&mut self, pid: u32) {
        (**self).generator_started(pid)
    }
    fn stop(&mut self) {
        (**self).stop()
    }
    fn load_complete(&mut self, pids: &[u32], report: &loadgen::Report) {
        (**self).load_complete(pids, report)
    }
    fn service_stopped(&mut self, told: &[StartOutcome]) {
        (**self).service_stopped(told)
    }
    fn part(&mut self, w: &Window) -> Part {
        (**self).part(w)
    }
}

/// The set, watching the service whose process tree is `server` (None: a generator alone).
pub struct Observers<'a> {
    server: Option<Tree>,
    members: Vec<Box<dyn Observer + 'a>>,
}

impl<'a> Observers<'a> {
    /// No member yet.
    pub fn new(server: Option<&Tree>) -> Observers<'a> {
        Observers {
            server: server.cloned(),
            members: vec![],
        }
    }

    /// `o` joins the set.
    pub fn with(mut self, o: impl Observer + 'a) -> Observers<'a> {
        self.members.push(Box::new(o));
        self
    }

    /// The service's own join the set: its cgroup (confined by `conf`) and its process tree.
    pub fn with_service(self, conf: &Confinement) -> Observers<'a> {
        let tree = self.server.clone();
        let set = self.with(Cgroup::start(conf));
        match tree {
            Some(t) => set.with(ProcTree::start(t)),
            None => set,
        }
    }

    /// Runs `load` with the set watching — `load` tells the generator's pid as it starts —
    /// then stops every member, the last one joined first (so each window lies inside the
    /// one started before it).
    pub fn watch<T>(&mut self, load: impl FnOnce(&mut dyn FnMut(u32)) -> T) -> T {
        if let Some(t) = &self.server {
            for o in &mut self.members {
                o.load_starting(t.leader);
            }
        }
        let members = &mut self.members;
        let value = load(&mut |pid| {
            for o in members.iter_mut() {
                o.generator_started(pid)
            }
        });
        for o in self.members.iter_mut().rev() {
            o.stop();
        }
        value
    }

    /// The load completed with `report`; the service, as `server_pids`, is still up.
    pub fn load_complete(&mut self, server_pids: &[u32], report: &loadgen::Report) {
        for o in &mut self.members {
            o.load_complete(server_pids, report);
        }
    }

    /// The service stopped, having told `told`.
    pub fn service_stopped(&mut self, told: &[StartOutcome]) {
        for o in &mut self.members {
            o.service_stopped(told);
        }
    }

    /// Every member's part over `w`; None without a window (the load failed).
    pub fn finish(mut self, w: Option<&Window>) -> Option<Observation> {
        let w = w?;
        let mut seen = Observation::default();
        for o in &mut self.members {
            seen.take(o.part(w));
        }
        Some(seen)
    }
}

/// Runs `load` with the service's own observers watching `tree`, and reads them over the
/// window `load` returns.
pub fn watch<T>(
    tree: &Tree,
    conf: &Confinement,
    load: impl FnOnce() -> T,
    window: impl FnOnce(&T) -> Option<Window>,
) -> (T, Option<Observation>) {
    let mut set = Observers::new(Some(tree)).with_service(conf);
    let value = set.watch(|_| load());
    let w = window(&value);
    let seen = set.finish(w.as_ref());
    (value, seen)
}

/// The generator, counted from /proc from the moment it runs (`load::run_observed` tells its
/// pid): its run, and its counts over the window it reports (None when the run failed).
pub fn counted_load(
    loadgen: &Path,
    spec: &LoadSpec,
    spec_file: &Path,
    conf: &Confinement,
) -> (Result<LoadRun, String>, Option<ProcessCounts>) {
    let mut set = Observers::new(None).with(Generator::default());
    let run = set.watch(|started| load::run_observed(loadgen, spec, spec_file, conf, started));
    let w = run.as_ref().ok().map(|r| Window::of(&r.report));
    let seen = set.finish(w.as_ref());
    (run, seen.and_then(|s| s.loadgen))
}

/// The generator's kernel counts from /proc (context switches, faults, CPU), from its start.
#[derive(Default)]
pub struct Generator {
    counter: Option<Counter>,
    counts: Option<Timeline>,
}

impl Observer for Generator {
    fn generator_started(&mut self, pid: u32) {
        self.counter = Some(Counter::start_proc(pid));
    }
    fn stop(&mut self) {
        self.counts = self.counter.take().map(Counter::finish);
    }
    fn part(&mut self, w: &Window) -> Part {
        self.counts
            .as_ref()
            .map_or(Part::Nothing, |t| Part::Generator(w.counts(t)))
    }
}

/// The exact syscall window after the timed load, the service still up, at `site`; or why
/// it does not run.
pub struct Syscalls<S> {
    site: Result<S, String>,
    spec: LoadSpec,
    window: Option<SyscallWindow>,
}

impl<S: Site> Syscalls<S> {
    /// At `site` for loads of `spec`'s shape; `off`: why no window follows (`Plan::syscalls_off`).
    pub fn new(site: S, spec: &LoadSpec, off: Option<&str>) -> Syscalls<S> {
        Syscalls {
            site: off.map_or(Ok(site), |why| Err(why.to_owned())),
            spec: spec.clone(),
            window: None,
        }
    }

    /// The site, for a caller that asks it more between the set's phases (`host::rep`).
    pub fn site(&mut self) -> Option<&mut S> {
        self.site.as_mut().ok()
    }
}

impl<S: Site> Observer for Syscalls<S> {
    fn load_complete(&mut self, server_pids: &[u32], report: &loadgen::Report) {
        self.window = Some(match &mut self.site {
            Err(why) => SyscallWindow::unmeasured(why.clone()),
            Ok(site) => exact::window(site, server_pids, &self.spec, report.requests_per_s),
        });
    }
    fn part(&mut self, _: &Window) -> Part {
        Part::Syscalls(
            self.window
                .take()
                .unwrap_or_else(|| SyscallWindow::unmeasured(NOT_LOADED)),
        )
    }
}

/// An open-loop repetition's send lag against the machine's timer floor `floor`, where the
/// generator reports it.
pub struct FloorChecker<'a> {
    floor: &'a loadgen::floor::Floor,
    rate_per_s: f64,
    check: Option<FloorCheck>,
}

impl<'a> FloorChecker<'a> {
    pub fn new(floor: &'a loadgen::floor::Floor, rate_per_s: f64) -> FloorChecker<'a> {
        FloorChecker {
            floor,
            rate_per_s,
            check: None,
        }
    }
}

impl Observer for FloorChecker<'_> {
    fn load_complete(&mut self, _: &[u32], r: &loadgen::Report) {
        let Some(lag) = &r.schedule_lag_us else {
            return;
        };
        let lag = crate::floor::Lag {
            send_p99_us: lag.p99,
            wake_p99_us: r.wake_lag_us.as_ref().map(|w| w.p99),
            own_p99_us: r.own_lag_us.as_ref().map(|w| w.p99),
            latency_p99_us: r.latency_us.p99,
        };
        self.check = crate::floor::check(self.floor, self.rate_per_s, lag);
    }
    fn part(&mut self, _: &Window) -> Part {
        self.check.take().map_or(Part::Nothing, Part::FloorCheck)
    }
}

/// The service's instructions per request under Valgrind, on starts of its own once the
/// measured one stopped (`--count-instructions`); a `command` server is not counted.
pub struct Instructions<'a> {
    target: Option<valgrind::Target<'a>>,
    count: Option<InstructionCount>,
}

impl<'a> Instructions<'a> {
    /// Counts `target` (its `io_driver` the one the measured start told).
    pub fn new(target: valgrind::Target<'a>) -> Instructions<'a> {
        Instructions {
            target: Some(target),
            count: None,
        }
    }

    pub fn not_for_command() -> Instructions<'a> {
        Instructions {
            target: None,
            count: Some(valgrind::not_for_command()),
        }
    }
}

impl Observer for Instructions<'_> {
    fn service_stopped(&mut self, told: &[StartOutcome]) {
        let Some(t) = &self.target else { return };
        let driver = told
            .iter()
            .find_map(|t| t.startup_line.as_ref())
            .map(|l| l.io_driver.clone());
        self.count = Some(valgrind::measure(&valgrind::Target {
            io_driver: driver.as_deref(),
            ..t.clone()
        }));
    }
    fn part(&mut self, _: &Window) -> Part {
        self.count.take().map_or(Part::Nothing, Part::Instructions)
    }
}

/// The tree from /proc, one pass every `sample::INTERVAL_MS`: its CPU, RSS and threads
/// (`sample`) and the kernel's per-process counts — context switches, faults, user and system
/// CPU (`count`).
struct ProcTree {
    running: Option<Poller<(Option<Sample>, Option<ProcRead>)>>,
    samples: Vec<Sample>,
    counts: Option<Timeline>,
}

impl ProcTree {
    fn start(tree: Tree) -> ProcTree {
        let mut samples = sample::TreeSampler::new(tree.clone());
        let mut reads = TreeReads::new(tree);
        let poll = move || {
            let read = (samples.sample(), reads.read());
            (read.0.is_some() || read.1.is_some()).then_some(read)
        };
        ProcTree {
            running: Some(Poller::start(poll)),
            samples: vec![],
            counts: None,
        }
    }
}

impl Observer for ProcTree {
    fn stop(&mut self) {
        if let Some(p) = self.running.take() {
            let (samples, reads): (Vec<_>, Vec<_>) = p.finish().into_iter().unzip();
            self.samples = samples.into_iter().flatten().collect();
            self.counts = Some(Timeline::of_reads(reads.into_iter().flatten().collect()));
        }
    }

    fn part(&mut self, w: &Window) -> Part {
        Part::Tree {
            usage: sample::usage_in_window(&self.samples, w.start_unix_us, w.secs, w.responses),
            counts: self.counts.as_ref().map(|t| w.counts(t)),
        }
    }
}

/// The cgroup's throttling and memory counters, as differences over the load (they are
/// cumulative and coarse: the whole load, not the window).
struct Cgroup {
    /// A reader of the service's confinement (which is released when the service stops).
    conf: Confinement,
    before: Option<CgroupCounters>,
    delta: Option<CgroupCounters>,
}

impl Cgroup {
    fn start(conf: &Confinement) -> Cgroup {
        Cgroup {
            conf: conf.reader(),
            before: conf.counters(),
            delta: None,
        }
    }
}

impl Observer for Cgroup {
    fn stop(&mut self) {
        self.delta = self
            .conf
            .counters()
            .zip(self.before.take())
            .map(|(a, b)| a.since(&b));
    }

    fn part(&mut self, _: &Window) -> Part {
        Part::Cgroup(self.delta.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One observer that logs its calls, to see the set's order.
    struct Logged<'a>(&'a std::cell::RefCell<Vec<String>>, &'static str);

    impl Observer for Logged<'_> {
        fn stop(&mut self) {
            self.0.borrow_mut().push(format!("stop {}", self.1));
        }
        fn part(&mut self, w: &Window) -> Part {
            self.0
                .borrow_mut()
                .push(format!("report {} {}", self.1, w.responses));
            Part::Nothing
        }
    }

    #[test]
    fn the_set_stops_the_last_started_first_then_reads_each_over_the_window() {
        let log = std::cell::RefCell::new(vec![]);
        let mut set = Observers::new(None)
            .with(Logged(&log, "counts"))
            .with(Logged(&log, "samples"));
        let w = Window {
            start_unix_us: 0,
            secs: 1.0,
            responses: 7,
        };
        set.watch(|_| ());
        assert!(set.finish(Some(&w)).is_some());
        assert_eq!(
            log.take(),
            [
                "stop samples",
                "stop counts",
                "report counts 7",
                "report samples 7"
            ]
        );
        let mut set = Observers::new(None).with(Logged(&log, "counts"));
        set.watch(|_| ());
        assert!(set.finish(None).is_none(), "no window, no observation");
        assert_eq!(log.take(), ["stop counts"]);
    }

    /// The real set on a child that spins: the sampler and the counts read its CPU over the
    /// same window and agree, within /proc's 10 ms ticks; no cgroup, no cgroup delta.
    #[test]
    fn two_observers_of_one_spinning_child_agree_on_its_cpu() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let tree = Tree::new(child.id(), vec![]);
        let conf = Confinement::default();
        let (w, seen) = watch(
            &tree,
            &conf,
            || {
                // The sampler's first read comes from its own thread: the window opens after
                // it, as a load's measured window opens after its warm-up.
                std::thread::sleep(std::time::Duration::from_millis(2 * sample::INTERVAL_MS));
                let start_unix_us = sample::now_unix_us();
                let t0 = std::time::Instant::now();
                std::thread::sleep(std::time::Duration::from_millis(400));
                Window {
                    start_unix_us,
                    secs: t0.elapsed().as_secs_f64(),
                    responses: 100,
                }
            },
            |w| Some(*w),
        );
        let _ = child.kill();
        let _ = child.wait();
        let seen = seen.expect("a window");
        let cpu = seen
            .usage
            .cpu_us
            .unwrap_or_else(|| panic!("{:?}", seen.usage));
        let c = &seen.counts;
        let counted = c.user_us.unwrap_or_default() + c.system_us.unwrap_or_default();
        let window_us = w.secs * 1e6;
        assert!(
            cpu > 0.0 && cpu < 1.1 * window_us + 20_000.0,
            "{cpu} µs in {window_us} µs"
        );
        assert!(
            (cpu - counted).abs() < 0.25 * cpu + 30_000.0,
            "sampler {cpu} µs, counts {counted} µs"
        );
        assert_eq!((c.responses, seen.usage.samples > 0), (100, true));
        assert_eq!(seen.cgroup, None);
    }
}
