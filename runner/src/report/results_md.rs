//! results.md regenerated: the runner's own Markdown page plus a section linking every
//! plot, so the page and the charts never disagree.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::compare::input::ResultSet;
use crate::export::markdown;

use super::charts::{Chart, by_kind};

/// service → "runtime version / io driver" from the first start-up line seen, as the run
/// itself writes it.
fn runtimes(set: &ResultSet) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for c in set.cells.values() {
        if let Some(b) = &c.banner {
            m.entry(c.cell.service.clone()).or_insert_with(|| {
                format!(
                    "{} {} / {}",
                    b.runtime.as_deref().unwrap_or("?"),
                    b.runtime_version.as_deref().unwrap_or(""),
                    b.io_driver.as_deref().unwrap_or("?")
                )
            });
        }
    }
    m
}

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
    let mut page = markdown::render(run, &set.results, &runtimes(set));
    page.extend_from_slice(b"\n");
    page.extend_from_slice(plots_section(charts).as_bytes());
    Ok(page)
}
