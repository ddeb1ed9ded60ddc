//! `matrix run` for a connection-churn cell: one repetition recorded on the cell (in
//! `churn`, not `reps`) with its progress line.

use crate::cell::{self, Ctx};
use crate::progress::Progress;
use crate::results::schema::{CellResult, CellStatus};
use crate::results::summary::summarize_cell;

const MIB: f64 = 1024.0 * 1024.0;

pub fn record_rep(ctx: &Ctx, st: &mut CellResult, rep: u32, progress: &mut Progress) {
    progress.begin(&st.cell, rep);
    match cell::run_churn_rep(ctx, st, rep) {
        Some(r) => {
            let mib = |b: Option<u64>| b.map_or("?".into(), |b| format!("{:.1}", b as f64 / MIB));
            let closed: Vec<String> = r.cycles.iter().map(|c| mib(c.rss_closed_bytes)).collect();
            let failed: u32 = r.cycles.iter().map(|c| c.failed).sum();
            let what = format!(
                "churn RSS {} → [{}] MiB after closing, {failed} connections failed",
                mib(r.rss_before_bytes),
                closed.join(", ")
            );
            progress.end_with(&st.cell, rep, &what);
            st.churn.push(r);
            if rep == st.cell.repetitions {
                st.status = CellStatus::Ok;
            }
        }
        None => {
            let failure = st.failure.as_ref().map(ToString::to_string);
            progress.end(&st.cell, rep, None, failure.as_deref());
            progress.skip(u64::from(st.cell.repetitions - rep));
        }
    }
    st.summary = summarize_cell(st);
}
