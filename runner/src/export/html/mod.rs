//! The results viewer: a run as one self-contained HTML page (`matrix report --html`) and a
//! site over every run (`matrix site`): an index, a compare view and a history per cell.
//!
//! The Rust side owns every number: it builds a view model (what the run measured, rank
//! bands from the run's own paired intervals, comparisons from the `compare` module) and
//! embeds it as JSON; the hand-written scripts in `runner/assets/viewer/` (no library) only
//! lay it out, sort and filter. Nothing here touches files; `cmd::report` and
//! `cmd::site` write what it returns.

pub mod bands;
pub mod detail;
pub mod page;
pub mod run_view;
pub mod site_view;

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

/// The site's files, relative to its directory: the index and one script per compare pair.
pub struct SiteFiles {
    pub index: String,
    /// (path relative to the index, contents): what the compare view loads on demand.
    pub pairs: Vec<(String, String)>,
}

/// The site's index (runs, compare view, history) and its pairs' scripts, given the run
/// sets it covers and each run's page path relative to the index.
pub fn site(
    runs: &[site_view::SiteRun<'_>],
    others: &[site_view::Other],
) -> anyhow::Result<SiteFiles> {
    let site = site_view::build(runs, others);
    let index = page::render(
        "pingmatrix · results",
        page::Kind::Site,
        &serde_json::to_string(&site.view)?,
    )?;
    let pairs = site
        .pairs
        .iter()
        .map(|e| {
            Ok((
                e.file.clone(),
                page::pair_script(&serde_json::to_string(e)?),
            ))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(SiteFiles { index, pairs })
}
