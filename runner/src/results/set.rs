//! Reading a result set — one side of a comparison, a run to report or a site's run: a run
//! directory or a results.json file, with the run.json and per-cell files next to it when
//! they exist. The one loader: what it reads is checked here (`untrusted`), and results.json
//! is checked against the cell files it summarises.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::results::schema::{CellResult, CellSummary, ResultsFile, RunRecord};
use crate::results::summary::summarize_cell;
use crate::results::untrusted::{self, read_json};

/// Everything one committed result set holds.
#[derive(Debug, Clone)]
pub struct ResultSet {
    /// What the user passed, for headers.
    pub label: String,
    /// The run directory.
    pub dir: PathBuf,
    pub results: ResultsFile,
    /// `None` when run.json is missing: the environment is then unknown.
    pub run: Option<RunRecord>,
    /// Per-cell files by key; cells without one fall back to the summary in results.json.
    pub cells: BTreeMap<String, CellResult>,
}

/// The run directory of `path`, a run directory or a file in one.
pub fn dir_of(path: &Path) -> PathBuf {
    if path.is_file() {
        path.parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    } else {
        path.to_path_buf()
    }
}

/// `path` is a run directory (holding results.json) or a results.json file. Refused when
/// results.json no longer summarises the cell files beside it (one of them was edited).
pub fn load(path: &Path) -> anyhow::Result<ResultSet> {
    let set = load_unmatched(path)?;
    set.check_summaries()?;
    Ok(set)
}

/// [`load`] without checking results.json against the cell files: for `--resummarize`,
/// which writes results.json anew from them.
pub fn load_unmatched(path: &Path) -> anyhow::Result<ResultSet> {
    let (dir, results_path) = if path.is_dir() {
        (path.to_path_buf(), path.join("results.json"))
    } else if path.is_file() {
        let dir = path
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        (dir, path.to_path_buf())
    } else {
        anyhow::bail!(
            "{}: no such run directory or results.json file",
            path.display()
        );
    };
    anyhow::ensure!(
        results_path.is_file(),
        "{} holds no results.json: not a finished run directory (a run writes it when it ends)",
        dir.display()
    );
    let results: ResultsFile = read_json(&results_path)?;
    untrusted::check_results(&results).with_context(|| format!("{}", results_path.display()))?;
    let run_path = dir.join("run.json");
    let run: Option<RunRecord> = if run_path.is_file() {
        Some(read_json(&run_path)?)
    } else {
        None
    };
    if let Some(r) = &run {
        untrusted::check_run(r).with_context(|| format!("{}", run_path.display()))?;
    }
    let mut cells = BTreeMap::new();
    let cells_dir = dir.join("cells");
    for s in &results.cells {
        let p = cells_dir.join(format!("{}.json", s.key));
        if p.is_file() {
            let c: CellResult = read_json(&p).with_context(|| format!("cell {}", s.key))?;
            untrusted::check_cell(&c).with_context(|| format!("{}", p.display()))?;
            anyhow::ensure!(
                c.cell.key == s.key,
                "{} holds cell {:?}, not {:?}",
                p.display(),
                c.cell.key,
                s.key
            );
            cells.insert(s.key.clone(), c);
        }
    }
    Ok(ResultSet {
        label: path.display().to_string(),
        dir,
        results,
        run,
        cells,
    })
}

/// Whether a summary computed now (`a`) says what the stored one (`b`) says: equal but for
/// floats a rounding apart (a summary computed before its cell file was written and read back
/// may differ in the last bits), on every field `b` has — a field a later version of the
/// summary adds is not in results.json written before it, and is not what this check is for.
fn same_summary(a: &CellSummary, b: &CellSummary) -> bool {
    fn same(a: &serde_json::Value, b: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
                _ => x == y,
            },
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                y.iter().all(|(k, w)| x.get(k).is_some_and(|v| same(v, w)))
            }
            _ => a == b,
        }
    }
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(a), Ok(b)) => same(&a, &b),
        _ => false,
    }
}

impl ResultSet {
    /// The calibration arms' cell files the run's plan names (they are not in results.json's
    /// cells); empty without run.json or arms.
    pub fn calibration_arms(&self) -> anyhow::Result<Vec<CellResult>> {
        let Some(run) = &self.run else {
            return Ok(Vec::new());
        };
        let mut arms = Vec::new();
        for spec in run.plan.iter().filter(|c| c.arm.is_some()) {
            let p = self.dir.join("cells").join(format!("{}.json", spec.key));
            if p.is_file() {
                let c: CellResult = read_json(&p).with_context(|| format!("cell {}", spec.key))?;
                untrusted::check_cell(&c).with_context(|| format!("{}", p.display()))?;
                arms.push(c);
            }
        }
        Ok(arms)
    }

    /// Every cell file summarises to its entry in results.json. A cell file (or results.json)
    /// edited after the run would otherwise give two answers: results.md the old summary,
    /// compare and the page the new repetitions.
    fn check_summaries(&self) -> anyhow::Result<()> {
        let stale: Vec<&str> = self
            .results
            .cells
            .iter()
            .filter(|s| {
                self.cells
                    .get(&s.key)
                    .is_some_and(|c| !same_summary(&summarize_cell(c), s))
            })
            .map(|s| s.key.as_str())
            .collect();
        anyhow::ensure!(
            stale.is_empty(),
            "{}: results.json does not summarise the cell files of {} (edited after the run?); \
             `matrix report --resummarize {}` summarises them again",
            self.dir.display(),
            stale.join(", "),
            self.dir.display()
        );
        Ok(())
    }
}
