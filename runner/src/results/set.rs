//! Reading one side of a comparison: a run directory or a results.json file, with the
//! run.json and per-cell files next to it when they exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::results::schema::{CellResult, ResultsFile, RunRecord};
use crate::results::store::read_json;

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

/// `path` is a run directory (holding results.json) or a results.json file.
pub fn load(path: &Path) -> anyhow::Result<ResultSet> {
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
    let run_path = dir.join("run.json");
    let run = if run_path.is_file() {
        Some(read_json(&run_path)?)
    } else {
        None
    };
    let mut cells = BTreeMap::new();
    let cells_dir = dir.join("cells");
    for s in &results.cells {
        let p = cells_dir.join(format!("{}.json", s.key));
        if p.is_file() {
            let c: CellResult = read_json(&p).with_context(|| format!("cell {}", s.key))?;
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
