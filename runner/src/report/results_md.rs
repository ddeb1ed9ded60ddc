//! results.md regenerated: the runner's own Markdown page plus a section linking every
//! plot, so the page and the charts never disagree.

use std::fmt::Write as _;

use crate::export::markdown;
use crate::results::group::runtimes_by_service;
use crate::results::set::ResultSet;

use super::charts::{Chart, by_kind};

pub fn plots_section(charts: &[Chart]) -> String {
    let mut o = String::from("## Plots\n\n");
    if charts.is_empty() {
        o.push_str("No cell had data to plot.\n");
        return o;
    }
    for (_, (heading, list)) in by_kind(charts) {
        let _ = writeln!(o, "### {heading}\n");
        for c in list {
            let _ = writeln!(o, "![{}]({})\n", c.title, c.file);
        }
    }
    o
}

pub fn render(set: &ResultSet, charts: &[Chart]) -> anyhow::Result<Vec<u8>> {
    let run = set.run.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "{} holds no run.json: results.md needs the run record",
            set.dir.display()
        )
    })?;
    let mut page = markdown::render(run, &set.results, &runtimes_by_service(set.cells.values()));
    page.extend_from_slice(b"\n");
    page.extend_from_slice(plots_section(charts).as_bytes());
    Ok(page)
}
