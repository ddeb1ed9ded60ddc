//! The results viewer: a run as one self-contained HTML page (`matrix report --html`); the
//! page shell (`page`) is also the one `site` fills with every run.
//!
//! The Rust side owns every number: it builds a view model (what the run measured, rank
//! bands from the run's own paired intervals) and
//! embeds it as JSON; the hand-written scripts in `runner/assets/viewer/` (no library) only
//! lay it out, sort and filter. Nothing here touches files; `cmd::report` and
//! `cmd::site` write what it returns.

pub mod detail;
pub mod page;
pub mod run_view;

use crate::results::set::ResultSet;

/// The run's page: `results/<run>/index.html`.
pub fn run_page(set: &ResultSet) -> anyhow::Result<String> {
    let view = run_view::build(set);
    page::render(
        &format!("pingmatrix · {}", set.results.run_id),
        page::Kind::Run,
        &serde_json::to_string(&view)?,
    )
}
