//! The repetition runners the schedule is given: `Local` — measured and churn repetitions
//! on this machine or a multi-host cell's hosts (`cell`), and the profiled one
//! (`flamegraph`); `Replay` — a recorded run's repetitions (`--fake-reps`). Each returns a
//! value; the schedule records it. `authored` — repetitions a small file authors
//! (`--fake-reps OUTCOMES.toml`).

pub mod authored;

use std::collections::BTreeMap;
use std::path::Path;

use crate::cell::{self, Ctx};
use crate::flamegraph::Profiler;
use crate::interrupt;
use crate::progress::Progress;
use crate::results::outcome::{RepBody, RepOutcome, StartOutcome};
use anyhow::Context;

use crate::results::schema::{CellFlamegraph, CellResult, CellSpec, RunRecord, Stage, StageError};
use crate::results::store::Store;
use crate::results::untrusted;
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
    /// The recorded run's id, which every replayed cell and results.json carry.
    run_id: String,
    /// Each cell file, read once (None: the run has none by that key).
    cells: BTreeMap<String, Option<CellResult>>,
}

impl Replay {
    pub fn open(run_dir: &Path) -> anyhow::Result<Replay> {
        let store = Store::open(run_dir)?;
        let run_id = recorded_run_id(run_dir)?;
        Ok(Replay {
            store,
            run_id,
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

/// The id of the run recorded in `run_dir` (its run.json), checked as a plain name: it is
/// written into the replay's files.
fn recorded_run_id(run_dir: &Path) -> anyhow::Result<String> {
    let run: RunRecord = untrusted::read_json(&run_dir.join("run.json"))
        .with_context(|| format!("--fake-reps {}", run_dir.display()))?;
    untrusted::check_key(&run.run_id)
        .with_context(|| format!("--fake-reps {}: run.json's run_id", run_dir.display()))?;
    Ok(run.run_id)
}

/// Before a replay starts: every planned cell the recorded run holds was recorded with the
/// spec this matrix gives it — a replay takes cells by key, and a key names the service,
/// scenario, level and profile, not the repetitions, durations, arguments or limits. Returns
/// the recorded run's id; Err names each cell that differs and how.
pub fn check_replay(run_dir: &Path, plan: &crate::plan::Plan) -> anyhow::Result<String> {
    let run_id = recorded_run_id(run_dir)?;
    let mut differ = Vec::new();
    for spec in plan.all_cells() {
        let p = run_dir.join("cells").join(format!("{}.json", spec.key));
        if !p.is_file() {
            continue;
        }
        let c: CellResult =
            untrusted::read_json(&p).with_context(|| format!("--fake-reps: cell {}", spec.key))?;
        if c.cell != *spec {
            let fields = spec_fields(&c.cell, spec);
            differ.push(format!("{} ({})", spec.key, fields.join(", ")));
        }
    }
    anyhow::ensure!(
        differ.is_empty(),
        "--fake-reps {}: the recorded cells were run with other settings than this matrix gives \
         them, so their repetitions are not this matrix's: {} differ",
        run_dir.display(),
        differ.join("; ")
    );
    Ok(run_id)
}

/// The names of the spec's fields that differ between `a` and `b`.
fn spec_fields(a: &CellSpec, b: &CellSpec) -> Vec<String> {
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .cloned()
                .collect()
        }
        _ => vec!["the spec".to_string()],
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

    fn replay_of(&self) -> Option<&str> {
        Some(&self.run_id)
    }
}
