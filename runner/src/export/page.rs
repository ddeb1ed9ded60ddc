//! results.md, the one recipe for both writers (`matrix run` as it finishes, `matrix report`
//! with the plots it drew): the runner's page (`markdown`), the plots section when there is
//! one, then the flame-graph and hosts sections.

use super::{flamegraphs, hosts, markdown};
use crate::results::group::runtimes_by_service;
use crate::results::schema::{CellResult, ResultsFile, RunRecord};

/// The page's bytes; `plots` is the section linking the plots (`matrix report`), if any.
pub fn results_md(
    run: &RunRecord,
    results: &ResultsFile,
    cells: &[&CellResult],
    plots: Option<&str>,
) -> Vec<u8> {
    let runtimes = runtimes_by_service(cells.iter().copied());
    let answers = crate::results::answers::of(results, cells.iter().copied());
    // Valgrind's two request counts as the run recorded them (its first count's).
    let instruction_requests = cells.iter().find_map(|c| {
        c.reps
            .iter()
            .find_map(|r| match r.instructions.as_ref()?.points[..] {
                [(n1, _), (n2, _), ..] => Some((n1, n2)),
                _ => None,
            })
    });
    let mut page = markdown::render(run, results, &runtimes, &answers, instruction_requests);
    if let Some(p) = plots {
        page.extend_from_slice(b"\n");
        page.extend_from_slice(p.as_bytes());
    }
    let sections = [
        flamegraphs::section(run.flamegraph.as_ref(), cells.iter().copied()),
        hosts::section(&run.hosts, cells.iter().copied()),
    ];
    for s in sections.iter().filter(|s| !s.is_empty()) {
        // After the plots section each one stands apart by a blank line; the page written
        // as the run finishes has always had them back to back.
        if plots.is_some() && !page.ends_with(b"\n\n") {
            page.push(b'\n');
        }
        page.extend_from_slice(s.as_bytes());
    }
    page
}
