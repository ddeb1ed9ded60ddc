//! Test fixtures built from a committed real cell file (tests only).

use super::schema::CellResult;

/// A committed real cell file: the shape the cell tests start from.
pub(crate) const REAL_CELL: &str = include_str!(
    "../../../results/2026-12-01T06-28-28Z-492c110/cells/ping-axum__ping__c64__pinned.json"
);

/// The real cell as service `service`, one repetition per value of `rps` (rounds 1..).
pub(crate) fn cell_with_rps(service: &str, rps: &[f64]) -> CellResult {
    let mut c: CellResult = serde_json::from_str(REAL_CELL).unwrap();
    c.cell.service = service.to_string();
    c.cell.key = format!("{service}__ping__c64__pinned");
    c.summary.service = service.to_string();
    c.summary.key = c.cell.key.clone();
    let template = c.reps[0].clone();
    c.reps = rps
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let mut r = template.clone();
            r.rep = i as u32 + 1;
            r.report.requests_per_s = v;
            r
        })
        .collect();
    // The summary the run would have written for these repetitions (a loaded set's
    // summaries are checked against its cells).
    c.summary = crate::results::summary::summarize_cell(&c);
    c
}
