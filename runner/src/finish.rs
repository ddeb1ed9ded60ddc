//! The end of a run, whoever ran it (`matrix run`, `matrix k8s ingest`): every cell file
//! of the plan read back, then results.json, results.md, the finished run.json and the run's page (index.html)
//! written.

use crate::export;
use crate::plan::Plan;
use crate::results::schema::{CellResult, CellStatus, Drift, ResultsFile, RunRecord, RunStatus};
use crate::results::store::Store;
use crate::results::summary::summarize_cell;
use crate::results::{calibration, verdict};
use crate::sample::now_unix_us;

/// What the end of a run wrote, for the caller's summary.
pub struct Finished {
    /// Some cell (or calibration arm) did not end ok.
    pub some_failed: bool,
    pub results: ResultsFile,
}

/// Reads every cell file of the plan back and writes results.json, results.md and run.json
/// (finished with `status`).
pub fn write_all(
    store: &Store,
    run: &mut RunRecord,
    plan: &Plan,
    status: RunStatus,
    drift: Option<Drift>,
) -> anyhow::Result<Finished> {
    let arms: Vec<CellResult> = plan
        .all_cells()
        .filter(|c| c.arm.is_some())
        .filter_map(|c| store.read_cell(&c.key))
        .collect();
    let cells: Vec<CellResult> = plan
        .cells()
        .filter_map(|c| store.read_cell(&c.key))
        .collect();
    let summaries = cells.iter().map(summarize_cell).collect();
    let mut results = export::json::results_file(&run.run_id, status, summaries, drift);
    results.replay_of = run.replay_of.clone();
    // An arm B that shared a measured cell's rounds is paired with that cell.
    results.calibration = calibration::from_cells(arms.iter().chain(&cells));
    results.verdicts = verdict::against_baseline(
        &cells.iter().collect::<Vec<_>>(),
        &plan.baseline,
        results.calibration.as_ref(),
    );
    results.baseline = Some(plan.baseline.clone()).filter(|_| !results.verdicts.is_empty());
    store.write_results(&results)?;
    run.status = status;
    run.finished_unix_ms = Some(now_unix_us() / 1000);
    store.write_run(run)?;
    let page = export::page::results_md(run, &results, &cells.iter().collect::<Vec<_>>(), None);
    store.write_file("results.md", &page)?;
    // The run's page is a view of what was just written; failing to draw it must not turn a
    // finished run into an error, so it is reported and the run ends as it would.
    match crate::results::set::load(&store.dir).and_then(|set| export::html::run_page(&set)) {
        Ok(html) => {
            store.write_file("index.html", html.as_bytes())?;
            println!("run page: {}", store.dir.join("index.html").display());
        }
        Err(e) => eprintln!("warning: the run's page was not written: {e:#}"),
    }
    let some_failed = cells.iter().chain(&arms).any(|c| {
        matches!(
            c.status,
            CellStatus::Failed | CellStatus::Interrupted | CellStatus::Partial
        )
    });
    Ok(Finished {
        some_failed,
        results,
    })
}
