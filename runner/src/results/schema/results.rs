//! results.json: the summaries of a finished run, one per cell, with verdicts, calibration
//! and drift.

use serde::{Deserialize, Serialize};

use super::analysis::{BaselineVerdict, Calibration, Definition};
use super::cell::CellSummary;
use super::run::RunStatus;

// ---------------------------------------------------------------------------------------
// results.json
// ---------------------------------------------------------------------------------------

/// `results/<run-id>/results.json`: the aggregate over all cells of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    pub schema_version: u32,
    pub run_id: String,
    pub status: RunStatus,
    /// `--fake-reps`: the id of the run whose recorded repetitions this replayed — nothing
    /// here was measured. `compare` refuses it (without `--force`), the site says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    pub cells: Vec<CellSummary>,
    /// Re-run of the reference cell at the end vs its first run.
    pub drift: Option<Drift>,
    pub failed_cells: u32,
    pub suspect_cells: u32,
    /// The service every other is judged against, and those verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<BaselineVerdict>,
    /// What this machine could tell apart in this run (`[calibration]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// The metric definitions this run was measured and judged with, for readers outside
    /// the runner (the gate's verdict); written with results.json, not read back (the
    /// runner's own views use its table).
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<Definition>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Drift {
    pub key: String,
    pub first_requests_per_s: Option<f64>,
    pub rerun_requests_per_s: Option<f64>,
    /// (rerun − first) / first × 100.
    pub requests_per_s_drift_pct: Option<f64>,
    pub first_cpu_us_per_request: Option<f64>,
    pub rerun_cpu_us_per_request: Option<f64>,
    pub cpu_us_per_request_drift_pct: Option<f64>,
    pub note: String,
    /// Every re-run through the run, in order (the last is `rerun_*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<DriftPoint>,
    /// The largest |change| of any re-run against repetition 1, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests_per_s_drift_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cpu_us_per_request_drift_pct: Option<f64>,
}

/// One re-run of the drift reference cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftPoint {
    /// Matrix groups finished before it (of `plan.groups`).
    pub after_groups: usize,
    pub unix_ms: u64,
    pub requests_per_s: Option<f64>,
    pub cpu_us_per_request: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}
