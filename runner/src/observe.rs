//! The service's observers: what watches it while a repetition's load runs, then says what it
//! saw over the generator's measured window. One set — one /proc poller over the tree (CPU,
//! RSS, threads: `sample`; context switches, faults, user and system CPU: `count`) and the
//! cgroup's throttling and memory counters (`limits`) — started and read the same way on
//! the runner's host (`cell`) and on a server host (`agent`), so a multi-host cell measures
//! what a local one does.
//!
//! The generator is counted from /proc too (`counted_load`), over the window it reports.
//!
//! Not among them: the syscall count, because perf slows every syscall and so has its own
//! window after the timed one (`count::exact`, shared by both paths), and Valgrind, which
//! needs starts of its own (`count::valgrind`).

use std::path::Path;

use loadgen::LoadSpec;

use crate::count::proc::{ProcRead, TreeReads};
use crate::count::{Counter, Timeline};
use crate::limits::Confinement;
use crate::load::{self, LoadRun};
use crate::process::Tree;
use crate::results::schema::{CgroupCounters, ProcessCounts, ServerUsage};
use crate::sample::{self, Poller, Sample};

/// The generator's measured window, on the clock of the host the service runs on, and the
/// responses completed in it.
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// What the observers saw over one window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    pub usage: ServerUsage,
    pub counts: ProcessCounts,
    /// None when the service runs in no cgroup.
    pub cgroup: Option<CgroupCounters>,
}

/// One way of watching the service: started as the set starts, just before the load.
pub trait Observer {
    /// The load is over: the last reads (threads joined).
    fn stop(&mut self);
    /// Its part of what was seen over `w`.
    fn report(&self, w: &Window, seen: &mut Observation);
}

/// The set, watching.
pub struct Observers<'a>(Vec<Box<dyn Observer + 'a>>);

impl<'a> Observers<'a> {
    /// Starts every observer on the service's process tree, confined by `conf`.
    pub fn start(tree: &Tree, conf: &'a Confinement) -> Observers<'a> {
        Observers(vec![
            Box::new(Cgroup::start(conf)),
            Box::new(ProcTree::start(tree.clone())),
        ])
    }

    /// Stops them all, the last started first (so each window lies inside the one started
    /// before it), and reads them over `w`; None without a window (the load failed).
    pub fn finish(mut self, w: Option<&Window>) -> Option<Observation> {
        for o in self.0.iter_mut().rev() {
            o.stop();
        }
        let w = w?;
        let mut seen = Observation::default();
        for o in &self.0 {
            o.report(w, &mut seen);
        }
        Some(seen)
    }
}

/// Runs `load` with the set watching, and reads the set over the window `load` returns.
pub fn watch<T>(
    tree: &Tree,
    conf: &Confinement,
    load: impl FnOnce() -> T,
    window: impl FnOnce(&T) -> Option<Window>,
) -> (T, Option<Observation>) {
    let set = Observers::start(tree, conf);
    let value = load();
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
    let mut counter = None;
    let run = load::run_observed(loadgen, spec, spec_file, conf, &mut |pid| {
        counter = Some(Counter::start_proc(pid))
    });
    let read = counter.map(Counter::finish);
    let counts = match (&run, read) {
        (Ok(r), Some(t)) => Some(Window::of(&r.report).counts(&t)),
        _ => None,
    };
    (run, counts)
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

    fn report(&self, w: &Window, seen: &mut Observation) {
        seen.usage = sample::usage_in_window(&self.samples, w.start_unix_us, w.secs, w.responses);
        if let Some(t) = &self.counts {
            seen.counts = w.counts(t);
        }
    }
}

/// The cgroup's throttling and memory counters, as differences over the load (they are
/// cumulative and coarse: the whole load, not the window).
struct Cgroup<'a> {
    conf: &'a Confinement,
    before: Option<CgroupCounters>,
    delta: Option<CgroupCounters>,
}

impl<'a> Cgroup<'a> {
    fn start(conf: &'a Confinement) -> Cgroup<'a> {
        Cgroup {
            conf,
            before: conf.counters(),
            delta: None,
        }
    }
}

impl Observer for Cgroup<'_> {
    fn stop(&mut self) {
        self.delta = self
            .conf
            .counters()
            .zip(self.before.take())
            .map(|(a, b)| a.since(&b));
    }

    fn report(&self, _: &Window, seen: &mut Observation) {
        seen.cgroup = self.delta.clone();
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
        fn report(&self, w: &Window, _: &mut Observation) {
            self.0
                .borrow_mut()
                .push(format!("report {} {}", self.1, w.responses));
        }
    }

    #[test]
    fn the_set_stops_the_last_started_first_then_reads_each_over_the_window() {
        let log = std::cell::RefCell::new(vec![]);
        let set = Observers(vec![
            Box::new(Logged(&log, "counts")),
            Box::new(Logged(&log, "samples")),
        ]);
        let w = Window {
            start_unix_us: 0,
            secs: 1.0,
            responses: 7,
        };
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
        let set = Observers(vec![Box::new(Logged(&log, "counts"))]);
        assert_eq!(set.finish(None), None, "no window, no observation");
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
