//! results.json: the aggregate over a run's cells.

use crate::results::schema::{
    CellStatus, CellSummary, Drift, ResultsFile, RunStatus, SCHEMA_VERSION,
};

pub fn results_file(
    run_id: &str,
    status: RunStatus,
    cells: Vec<CellSummary>,
    drift: Option<Drift>,
) -> ResultsFile {
    ResultsFile {
        schema_version: SCHEMA_VERSION,
        run_id: run_id.into(),
        status,
        replay_of: None,
        failed_cells: cells
            .iter()
            .filter(|c| {
                matches!(
                    c.status,
                    Some(CellStatus::Failed) | Some(CellStatus::Interrupted)
                )
            })
            .count() as u32,
        suspect_cells: cells.iter().filter(|c| c.suspect).count() as u32,
        cells,
        drift,
        baseline: None,
        verdicts: Vec::new(),
        calibration: None,
        metrics: crate::results::metric::DEFINITIONS.to_vec(),
    }
}

/// results.json's bytes (written by `results::store`; here for the views' callers).
pub use crate::results::store::results_bytes as to_bytes;
