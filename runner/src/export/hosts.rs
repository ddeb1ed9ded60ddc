//! results.md's "Hosts" section for multi-host runs: every host with its machine, the
//! binaries shipped to it (sha256, verified on arrival) and its clock offset, then each
//! multi-host cell's generator hosts side by side with the merged figures. Empty for a
//! single-machine run, so their pages stay as they were.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::results::schema::{CellResult, HostRecord};
use crate::results::summary::summarize;

pub fn section<'a>(hosts: &[HostRecord], cells: impl Iterator<Item = &'a CellResult>) -> String {
    if hosts.is_empty() {
        return String::new();
    }
    let cells: Vec<&CellResult> = cells.filter(|c| c.cell.hosts.is_some()).collect();
    let mut o = String::from("## Hosts\n\n");
    o += "Multi-host cells ran the service on one host and split the load between generator \
          hosts (the note above about one shared machine does not apply to them). Latency is \
          measured on the generators only; a cell's percentiles come from their histograms \
          added together, and each host's own report is in the cell file \
          (`reps[].generators`).\n\n";
    o += "| host | destination | role | machine | binaries (sha256, verified on arrival) | clock offset |\n";
    o += "|---|---|---|---|---|---|\n";
    for h in hosts {
        let mut roles = BTreeSet::new();
        for c in &cells {
            if let Some(p) = &c.cell.hosts {
                if p.server_host == h.name {
                    roles.insert("server");
                }
                if p.loadgen_hosts.contains(&h.name) {
                    roles.insert("generator");
                }
            }
        }
        let machine = h.environment.as_ref().map_or("–".to_string(), |e| {
            format!(
                "{} × {}, kernel {}",
                e.hardware.cpu_model, e.hardware.logical_cpus, e.os.kernel
            )
        });
        let bins: Vec<String> = h
            .binaries
            .iter()
            .map(|(n, b)| {
                let mark = if b.verified { "✓" } else { "✗" };
                format!(
                    "{n} `{}` {mark} ({})",
                    &b.sha256[..b.sha256.len().min(12)],
                    b.via
                )
            })
            .collect();
        let clock = match (h.clock_offset_us, h.clock_rtt_us) {
            (Some(o), Some(r)) => format!("{o:+} µs (±{} µs)", r.div_ceil(2)),
            _ => "–".into(),
        };
        let machine = match &h.unavailable {
            Some(why) => format!("**unavailable**: {}", why.replace('|', "\\|")),
            None => machine,
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {machine} | {} | {clock} |",
            h.name,
            h.destination,
            roles.into_iter().collect::<Vec<_>>().join(", "),
            bins.join(", "),
        );
    }
    let rows: Vec<String> = cells.iter().flat_map(|c| per_host_rows(c)).collect();
    if !rows.is_empty() {
        o += "\nGenerator hosts per cell (medians over repetitions):\n\n";
        o += "| cell | host | req/s | p50 | p99 |\n|---|---|---|---|---|\n";
        for r in rows {
            o += &r;
        }
    }
    o.push('\n');
    o
}

/// One row per generator host of the cell and one for the merge.
fn per_host_rows(c: &CellResult) -> Vec<String> {
    let Some(first) = c.reps.first() else {
        return vec![];
    };
    let median = |v: Vec<f64>| summarize(&v).map_or(0.0, |s| s.median);
    let mut hosts: Vec<Option<&str>> = first
        .generators
        .iter()
        .map(|g| Some(g.host.as_str()))
        .collect();
    hosts.push(None);
    hosts
        .into_iter()
        .map(|h| {
            let reports: Vec<&loadgen::Report> = c
                .reps
                .iter()
                .filter_map(|r| match h {
                    Some(h) => r.generators.iter().find(|g| g.host == h).map(|g| &g.report),
                    None => Some(&r.report),
                })
                .collect();
            let rps = median(reports.iter().map(|r| r.requests_per_s).collect());
            let p50 = median(reports.iter().map(|r| r.latency_us.p50 as f64).collect());
            let p99 = median(reports.iter().map(|r| r.latency_us.p99 as f64).collect());
            format!(
                "| {} | {} | {rps:.0} | {p50:.0} µs | {p99:.0} µs |\n",
                c.cell.key,
                h.unwrap_or("**merged**"),
            )
        })
        .collect()
}
