//! `matrix run --flamegraph`: the glue between a run and [`crate::profile`].
//!
//! - perf is probed once per run ([`Profiler::probe`]); the outcome, or why perf is not
//!   available, goes into run.json ([`Profiler::record`]).
//! - After a cell's measured repetitions, [`Profiler::profiled_rep`] runs one extra
//!   repetition (`repetitions + 1`) with `perf record -p <server>` started `warmup_ms` after
//!   the generator, so only the measured window is sampled, and stopped once the generator
//!   exits. perf (and its `perf script` afterwards) runs on the generator's CPUs, never on
//!   the server's. The repetition is stored in [`CellFlamegraph`], not in `reps`: no summary
//!   sees perf's overhead, and results.md shows its req/s beside the unprofiled median.
//! - Outputs: `<run>/flamegraphs/<cell key>.svg` and `.folded`; the cell file holds the
//!   [`ProfileRecord`] with paths relative to the run directory.
//! - perf missing or refused: the cell records `not_available` with the reason, no extra
//!   repetition runs, and the run goes on.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::cell::Ctx;
use crate::limits::cpus::on_cpus;
use crate::observe::Observer;
use crate::profile::{NotAvailable, Options, Perf, Profile, ProfileRecord};
use crate::results::schema::{CellFlamegraph, CellSpec, FlamegraphProbe};

/// The directory under the run directory that holds the flame graphs.
pub const DIR: &str = "flamegraphs";

pub use crate::count::perf::PERF_ENV;

/// perf as probed for this run, with the recording options every cell uses.
pub struct Profiler {
    perf: Result<Perf, NotAvailable>,
    options: Options,
}

impl Profiler {
    /// Probes perf once (`$PINGMATRIX_PERF` or `perf`); samples at `frequency_hz`, inlined
    /// frames resolved if `inline`.
    pub fn probe(frequency_hz: u32, inline: bool) -> Profiler {
        Profiler {
            perf: Perf::probe_with(crate::count::perf::program()),
            options: Options {
                frequency_hz,
                inline,
                ..Options::default()
            },
        }
    }

    /// What run.json records.
    pub fn record(&self) -> FlamegraphProbe {
        match &self.perf {
            Ok(p) => FlamegraphProbe::Available {
                perf_version: p.version.clone(),
                event: p.event.clone(),
                hardware_counters: p.hardware_counters,
                perf_event_paranoid: p.paranoid,
                call_graph: self.options.call_graph,
                frequency_hz: self.options.frequency_hz,
                inline_frames: self.options.inline,
            },
            Err(na) => FlamegraphProbe::NotAvailable {
                reason: na.reason.clone(),
            },
        }
    }

    /// The not-available reason, if perf cannot be used.
    pub fn unavailable(&self) -> Option<&str> {
        self.perf.as_ref().err().map(|na| na.reason.as_str())
    }

    /// Runs the profiled repetition of `cell` (whose measured repetitions are done); its
    /// starts are not the cell's. `run_dir` is where `flamegraphs/` goes.
    pub fn profiled_rep(&self, ctx: &Ctx, cell: &CellSpec, run_dir: &Path) -> CellFlamegraph {
        let rep = cell.repetitions + 1;
        let mut fg = CellFlamegraph {
            rep,
            profiled: true,
            result: None,
            profile: None,
            error: None,
        };
        if let Some(p) = &cell.hosts {
            fg.error = Some(format!(
                "not profiled: the server runs on host {}; --flamegraph profiles servers on \
                 this machine only",
                p.server_host
            ));
            return fg;
        }
        let perf = match &self.perf {
            Ok(p) => p,
            Err(na) => {
                fg.profile = Some(Profile::NotAvailable(na.clone()));
                return fg;
            }
        };
        let mut options = self.options.clone();
        options.title = format!("{} — {} (run {})", cell.key, perf.event, ctx.run_id);
        let mut window = PerfWindow {
            perf: perf.clone(),
            options,
            dir: run_dir.join(DIR),
            cell,
            running: None,
            outcome: None,
        };
        let o = crate::cell::run_rep_with(ctx, cell, rep, Some(&mut window));
        fg.result = o.measured().cloned();
        match window.outcome {
            Some(Ok(p)) => fg.profile = Some(relative(p, run_dir)),
            Some(Err(e)) => fg.error = Some(e),
            None => {}
        }
        if let Some(f) = o.failure {
            let e = format!("profiled repetition failed: {f}");
            fg.error = Some(match fg.error {
                Some(prev) => format!("{e}; {prev}"),
                None => e,
            });
        }
        fg
    }
}

/// Output paths relative to the run directory, so a run directory can be moved.
fn relative(p: Profile, run_dir: &Path) -> Profile {
    let rel = |p: PathBuf| p.strip_prefix(run_dir).map(Path::to_path_buf).unwrap_or(p);
    match p {
        Profile::Recorded(r) => Profile::Recorded(ProfileRecord {
            folded: rel(r.folded),
            svg: r.svg.map(rel),
            perf_data: r.perf_data.map(rel),
            ..r
        }),
        na => na,
    }
}

/// What the profiling thread hands back: the profile, or a real failure.
type Outcome = Result<Profile, String>;

/// perf beside the load, one of the repetition's observers: a thread on the generator's
/// CPUs waits out the warm-up, starts `perf record`, and stops it (then folds and draws)
/// when the load is done. Its outcome stays here, whether or not the load completed.
struct PerfWindow<'c> {
    perf: Perf,
    options: Options,
    dir: PathBuf,
    cell: &'c CellSpec,
    running: Option<(mpsc::Sender<()>, JoinHandle<Outcome>)>,
    outcome: Option<Result<Profile, String>>,
}

impl Observer for PerfWindow<'_> {
    fn load_starting(&mut self, server_pid: u32) {
        let cell = self.cell;
        let (tx, rx) = mpsc::channel::<()>();
        let perf = self.perf.clone();
        let options = self.options.clone();
        let dir = self.dir.clone();
        let name = cell.key.clone();
        let cpus = cell.limits.loadgen_cpus.clone();
        let warmup = Duration::from_millis(cell.warmup_ms);
        let started = std::time::Instant::now();
        let handle = std::thread::spawn(move || {
            on_cpus(&cpus, || {
                // perf attaches (disabled) during the warm-up and is enabled when it ends, so
                // its attach time is not taken from the measured window.
                let mut rec = perf
                    .start_paused(server_pid, &options, &dir, &name)
                    .map_err(|e| e.to_string())?;
                match rx.recv_timeout(warmup.saturating_sub(started.elapsed())) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => {
                        let _ = rec.stop();
                        return Err("the load ended before its warm-up did".to_owned());
                    }
                }
                rec.enable();
                let _ = rx.recv();
                rec.stop().map_err(|e| e.to_string())
            })
        });
        self.running = Some((tx, handle));
    }

    fn stop(&mut self) {
        if let Some((tx, handle)) = self.running.take() {
            let _ = tx.send(());
            self.outcome = Some(
                handle
                    .join()
                    .unwrap_or_else(|_| Err("the profiling thread panicked".to_owned())),
            );
        }
    }
}
