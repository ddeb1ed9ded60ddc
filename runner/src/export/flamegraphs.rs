//! The "Flame graphs" section of results.md (`matrix run --flamegraph`): one row per profiled
//! cell linking its SVG, with the profiled repetition's req/s beside the unprofiled median.
//! Empty — and results.md unchanged — for runs without flame graphs.

use std::fmt::Write;

use crate::results::schema::{CallGraph, Profile};
use crate::results::schema::{CellFlamegraph, CellResult, CellStatus, FlamegraphProbe};

/// One line on what the profiled repetition left: samples and file, or why there is none.
pub fn outcome(fg: &CellFlamegraph) -> String {
    let mut parts = Vec::new();
    match &fg.profile {
        Some(Profile::Recorded(r)) => match &r.svg {
            Some(svg) => parts.push(format!(
                "{} samples → {}",
                r.samples.map_or("?".into(), |s| s.to_string()),
                svg.display()
            )),
            None => parts.push("no samples (nothing to draw)".into()),
        },
        Some(Profile::NotAvailable(na)) => parts.push(format!("perf not available: {}", na.reason)),
        None => {}
    }
    if let Some(e) = &fg.error {
        parts.push(e.clone());
    }
    if parts.is_empty() {
        parts.push("nothing recorded".into());
    }
    parts.join("; ")
}

fn call_graph(c: &CallGraph) -> String {
    match c {
        CallGraph::Dwarf { stack_bytes } => format!("DWARF call graphs ({stack_bytes} B of stack)"),
        CallGraph::FramePointer => "frame-pointer call graphs".into(),
    }
}

/// The section, or "" when the run has no flame graphs.
pub fn section<'a>(
    probe: Option<&FlamegraphProbe>,
    cells: impl IntoIterator<Item = &'a CellResult>,
) -> String {
    let (cells, without): (Vec<&CellResult>, Vec<&CellResult>) =
        cells.into_iter().partition(|c| c.flamegraph.is_some());
    if probe.is_none() && cells.is_empty() {
        return String::new();
    }
    let mut o = String::new();
    let _ = writeln!(o, "## Flame graphs\n");
    let probe_na = matches!(probe, Some(FlamegraphProbe::NotAvailable { .. }));
    match probe {
        Some(FlamegraphProbe::Available {
            perf_version,
            event,
            call_graph: cg,
            frequency_hz,
            inline_frames,
            ..
        }) => {
            let inline = if *inline_frames {
                ""
            } else {
                " Inlined functions are not frames of their own (`--flamegraph-no-inline`): \
                 their time is their caller's."
            };
            let _ = writeln!(
                o,
                "{perf_version}, event `{event}` at {frequency_hz} Hz, {}. Each flame graph \
                 comes from one extra repetition of its cell, sampled during the measured \
                 window (after the warm-up) with perf on the generator's CPUs; that \
                 repetition is in no number above. Its req/s and server CPU per request \
                 beside the unprofiled medians show what perf cost.{inline}\n",
                call_graph(cg)
            );
        }
        Some(FlamegraphProbe::NotAvailable { reason }) => {
            let _ = writeln!(o, "**perf not available: {reason}.** No flame graphs.\n");
        }
        None => {}
    }
    // A completed cell the run was asked to profile but holds no profiled repetition (e.g.
    // an interrupted run whose resume did not get to it) is named, not left out silently.
    let missing: Vec<String> = without
        .iter()
        .filter(|c| c.status == CellStatus::Ok && !probe_na && probe.is_some())
        .map(|c| format!("`{}`", c.cell.key))
        .collect();
    if !missing.is_empty() {
        let _ = writeln!(
            o,
            "**Without a flame graph** (no profiled repetition ran): {}.\n",
            missing.join(", ")
        );
    }
    if cells.is_empty() {
        return o;
    }
    let _ = writeln!(
        o,
        "| cell | flame graph | samples | req/s profiled | req/s median (unprofiled) | change \
         | server CPU µs/req profiled | median (unprofiled) | change |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for c in cells {
        let Some(fg) = &c.flamegraph else { continue };
        let link = match &fg.profile {
            Some(Profile::Recorded(r)) => match &r.svg {
                Some(svg) => format!(
                    "[svg]({}) ([folded]({}))",
                    svg.display(),
                    r.folded.display()
                ),
                None => "no samples".into(),
            },
            // The reason is in the paragraph above.
            Some(Profile::NotAvailable(_)) if probe_na && fg.error.is_none() => {
                "perf not available".into()
            }
            _ => outcome(fg),
        };
        let samples = match &fg.profile {
            Some(Profile::Recorded(r)) => r.samples.map_or("–".into(), |s| s.to_string()),
            _ => "–".into(),
        };
        let profiled = fg.result.as_ref().map(|r| r.report.requests_per_s);
        let median = c.summary.requests_per_s.as_ref().map(|s| s.median);
        let change = |p: Option<f64>, m: Option<f64>| match (p, m) {
            (Some(p), Some(m)) if m > 0.0 => format!("{:+.1} %", (p / m - 1.0) * 100.0),
            _ => "–".into(),
        };
        let cpu = fg.result.as_ref().and_then(|r| r.server.cpu_us_per_request);
        let cpu_median = c
            .summary
            .server_cpu_us_per_request
            .as_ref()
            .map(|s| s.median);
        let num = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.0}"));
        let num2 = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.2}"));
        let _ = writeln!(
            o,
            "| `{}` | {link} | {samples} | {} | {} | {} | {} | {} | {} |",
            c.cell.key,
            num(profiled),
            num(median),
            change(profiled, median),
            num2(cpu),
            num2(cpu_median),
            change(cpu, cpu_median)
        );
    }
    let _ = writeln!(o);
    o
}
