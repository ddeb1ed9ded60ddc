//! The repetition runners the schedule is given: `Local` — measured and churn repetitions
//! on this machine or a multi-host cell's hosts (`cell`), and the profiled one
//! (`flamegraph`); `Replay` — a recorded run's repetitions (`--fake-reps`). Each returns a
//! value; the schedule records it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::cell::{self, Ctx};
use crate::flamegraph::Profiler;
use crate::interrupt;
use crate::progress::Progress;
use crate::results::outcome::{RepBody, RepOutcome, StartOutcome};
use crate::results::schema::{CellFlamegraph, CellResult, CellSpec, Stage, StageError};
use crate::results::store::Store;
use crate::schedule::RepRunner;

/// Repetitions on this machine (or its fleet), for the schedule.
pub struct Local<'a> {
    pub ctx: &'a Ctx<'a>,
    pub run_dir: &'a Path,
    pub profiler: Option<&'a Profiler>,
}

impl RepRunner for Local<'_> {
    fn rep(&mut self, cell: &CellSpec, rep: u32) -> RepOutcome {
        cell::run_rep(self.ctx, cell, rep)
    }

    fn profiled_rep(&mut self, cell: &CellSpec, progress: &Progress) -> Option<CellFlamegraph> {
        let fg = self.profiler?.profiled_rep(self.ctx, cell, self.run_dir);
        progress.note(&format!(
            "{} profiled: {}",
            cell.key,
            crate::export::flamegraphs::outcome(&fg)
        ));
        Some(fg)
    }

    fn cool_down(&mut self, ms: u64) -> bool {
        interrupt::sleep_ms(ms)
    }
}

/// Recorded repetitions replayed (`matrix run --fake-reps RUN_DIR`, hidden, as hyperfine's
/// debug mode): each repetition of a cell is the one the run directory's cell file holds for
/// it, with its starts and what they told; a repetition it does not hold fails, saying so, as
/// the recorded cell's own failure where it had one. Nothing is started, so everything after
/// a repetition — the schedule's stops, summaries, verdicts, results.md, the page — is
/// tested on real recorded data in milliseconds. Drift re-runs are not recorded in cell files:
/// they fail, so the drift record says so.
pub struct Replay {
    store: Store,
    /// Each cell file, read once (None: the run has none by that key).
    cells: BTreeMap<String, Option<CellResult>>,
}

impl Replay {
    pub fn open(run_dir: &Path) -> anyhow::Result<Replay> {
        Ok(Replay {
            store: Store::open(run_dir)?,
            cells: BTreeMap::new(),
        })
    }

    fn cell(&mut self, key: &str) -> Option<&CellResult> {
        let store = &self.store;
        self.cells
            .entry(key.to_owned())
            .or_insert_with(|| store.read_cell(key))
            .as_ref()
    }
}

/// A replayed repetition that was not recorded, for `why`.
fn not_recorded(why: String) -> RepOutcome {
    RepOutcome::failed(StageError::at(Stage::Spawn, format!("--fake-reps: {why}")))
}

impl RepRunner for Replay {
    fn rep(&mut self, cell: &CellSpec, rep: u32) -> RepOutcome {
        let Some(c) = self.cell(&cell.key) else {
            return not_recorded(format!("no recorded cell {}", cell.key));
        };
        let body = if cell.churn.is_some() {
            c.churn
                .iter()
                .find(|r| r.rep == rep)
                .map(|r| RepBody::Churn(r.clone()))
        } else {
            c.reps
                .iter()
                .find(|r| r.rep == rep)
                .map(|r| RepBody::Measured(Box::new(r.clone())))
        };
        let failure = match (&body, &c.failure) {
            (Some(RepBody::Churn(r)), _) => r
                .partial
                .as_ref()
                .map(|why| StageError::at(Stage::Load, why.clone())),
            (Some(_), _) => None,
            (None, Some(f)) => Some(f.clone()),
            (None, None) => {
                return not_recorded(format!("{} has no repetition {rep} recorded", cell.key));
            }
        };
        RepOutcome {
            starts: c.starts.iter().filter(|s| s.rep == rep).cloned().collect(),
            told: vec![StartOutcome {
                limits: c.limits.clone(),
                startup_line: c.startup_line.clone(),
                verification: c.verification.clone(),
            }],
            body,
            failure,
        }
    }

    fn profiled_rep(&mut self, cell: &CellSpec, _: &Progress) -> Option<CellFlamegraph> {
        self.cell(&cell.key)?.flamegraph.clone()
    }

    fn cool_down(&mut self, _ms: u64) -> bool {
        !interrupt::requested()
    }
}
