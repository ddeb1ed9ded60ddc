//! `matrix ingest`: loadgen reports saved from the generator Jobs' logs
//! (`<reports>/<cell key>.<n>.json`, or `<cell key>.json` for one) → a result set like
//! `matrix run` writes, for the cells `matrix k8s render` planned (its plan.json). Server CPU
//! and memory were not sampled in the cluster: those fields stay "not measured".

use std::path::{Path, PathBuf};

use crate::results::schema::{CellResult, CellSpec, CellStatus, RepResult, ServerUsage};
use crate::results::summary::summarize_cell;

/// The reports of `key` in `dir`, in repetition order.
pub fn reports_for(dir: &Path, key: &str) -> anyhow::Result<Vec<(PathBuf, loadgen::Report)>> {
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(rest) = name.strip_prefix(key).and_then(|r| r.strip_suffix(".json")) else {
            continue;
        };
        let n = match rest {
            "" => 1,
            r => match r.strip_prefix('.').and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => continue,
            },
        };
        found.push((n, p));
    }
    found.sort();
    found
        .into_iter()
        .map(|(_, p)| {
            let text = std::fs::read_to_string(&p)?;
            let r: loadgen::Report = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: not a loadgen report: {e}", p.display()))?;
            Ok((p, r))
        })
        .collect()
}

/// One cell's result from its reports (None when there are none).
pub fn cell_result(
    run_id: &str,
    spec: &CellSpec,
    reports: Vec<loadgen::Report>,
) -> Option<CellResult> {
    if reports.is_empty() {
        return None;
    }
    let mut spec = spec.clone();
    spec.repetitions = reports.len() as u32;
    let mut c = CellResult::new(run_id, &spec);
    c.reps = reports
        .into_iter()
        .enumerate()
        .map(|(i, report)| RepResult {
            rep: i as u32 + 1,
            started_unix_ms: report.started_unix_ms,
            report,
            server: ServerUsage::default(),
            cgroup: None,
            loadgen_exit_code: None,
            floor_check: None,
            generators: vec![],
            counts: None,
            instructions: None,
        })
        .collect();
    c.status = CellStatus::Ok;
    c.summary = summarize_cell(&c);
    Some(c)
}
