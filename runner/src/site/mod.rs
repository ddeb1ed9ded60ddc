//! `matrix site`'s content: one index over every run — the runs, a compare view of any two
//! (the `compare` module's verdicts, one script per pair) and a history per cell — in the
//! viewer's page shell (`export::html::page`). It sits above `export` and `compare` and reads
//! both; nothing here touches files (`cmd::site` writes what it returns).

pub mod view;

use crate::export::html::page;

/// The site's files, relative to its directory: the index and one script per compare pair.
pub struct SiteFiles {
    pub index: String,
    /// (path relative to the index, contents): what the compare view loads on demand.
    pub pairs: Vec<(String, String)>,
}

/// The site's index (runs, compare view, history) and its pairs' scripts, given the run
/// sets it covers and each run's page path relative to the index.
pub fn files(runs: &[view::SiteRun<'_>], others: &[view::Other]) -> anyhow::Result<SiteFiles> {
    let site = view::build(runs, others);
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
