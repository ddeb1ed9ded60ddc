//! The section of results.md that links every plot, so the page and the charts never
//! disagree; `cmd::report` appends it to the page `export::markdown` renders.

use std::fmt::Write as _;

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
