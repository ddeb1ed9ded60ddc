//! results.md: one page a human reads. It leads with the metrics valid on any machine
//! (server CPU per request and latency at equal offered load), then throughput tables
//! (services as rows, load levels as columns) with generator-saturated cells marked.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::results::group::{self, Group};
use crate::results::schema::{CellStatus, CellSummary, ResultsFile, RunRecord};
use crate::results::units::{mib_cell, micros_cell, rate_cell};

/// Marks: † generator saturated, ⚠ suspect, ✗ failed, n/a unsupported.
fn marks(c: &CellSummary) -> String {
    let mut m = String::new();
    if c.generator_saturated {
        m.push('†');
    }
    if c.suspect {
        m.push('⚠');
    }
    m
}

fn bad_status(c: &CellSummary) -> Option<&'static str> {
    match c.status {
        Some(CellStatus::Failed) => Some("✗ failed"),
        Some(CellStatus::Unsupported) => Some("n/a (unsupported)"),
        Some(CellStatus::Interrupted) => Some("interrupted"),
        _ if c.n == 0 => Some("–"),
        _ => None,
    }
}

fn closed_cell(c: &CellSummary) -> String {
    if let Some(s) = bad_status(c) {
        return s.into();
    }
    let mut s = String::new();
    if let Some(r) = &c.requests_per_s {
        s += &rate_cell(r.median);
        if let (Some(lo), Some(hi)) = (r.ci95_low, r.ci95_high) {
            let _ = write!(s, " ±{:.0}%", (hi - lo) / 2.0 / r.mean.max(1e-9) * 100.0);
        }
    }
    if let Some(l) = &c.latency {
        let _ = write!(s, " · p99 {}", micros_cell(l.p99_us as f64));
    }
    if let Some(cpu) = &c.server_cpu_us_per_request {
        let _ = write!(s, " · {:.1} µs/req", cpu.median);
    }
    s + &marks(c)
}

fn open_cell(c: &CellSummary) -> String {
    if let Some(s) = bad_status(c) {
        return s.into();
    }
    let mut s = String::new();
    if let Some(cpu) = &c.server_cpu_us_per_request {
        let _ = write!(s, "{:.1} µs/req", cpu.median);
    }
    if let Some(l) = &c.latency {
        let _ = write!(
            s,
            " · p50 {} · p99 {}",
            micros_cell(l.p50_us as f64),
            micros_cell(l.p99_us as f64)
        );
    }
    s + &marks(c)
}

fn table(out: &mut String, g: &Group, f: fn(&CellSummary) -> String) {
    let levels = g.levels();
    let _ = writeln!(out, "### {} · profile {}\n", g.scenario, g.profile);
    let _ = writeln!(out, "| service | {} |", levels.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(levels.len()));
    for s in g.services() {
        let row: Vec<String> = levels
            .iter()
            .map(|l| g.cell(&s, l).map_or_else(|| "–".into(), f))
            .collect();
        let _ = writeln!(out, "| {s} | {} |", row.join(" | "));
    }
    let _ = writeln!(out);
}

/// `runtimes`: service → "runtime version / io driver" from its start-up line.
pub fn render(run: &RunRecord, res: &ResultsFile, runtimes: &BTreeMap<String, String>) -> Vec<u8> {
    let mut o = String::new();
    let _ = writeln!(o, "# pingmatrix results — {}\n", run.run_id);
    header(&mut o, run, res);
    how_to_read(&mut o, res);
    load_tables(&mut o, res);
    super::churn::section(&mut o, res);
    startup_and_memory(&mut o, res, runtimes);
    drift(&mut o, res);
    suspects(&mut o, res);
    let _ = writeln!(
        o,
        "Per-cell detail (every repetition's full generator report, samples, limits): `cells/<key>.json`; environment and plan: `run.json`."
    );
    o.into_bytes()
}

/// Status, machine and source in one paragraph.
fn header(o: &mut String, run: &RunRecord, res: &ResultsFile) {
    let e = &run.environment;
    let _ = writeln!(
        o,
        "Status **{:?}**, {} cells ({} suspect, {} failed){}. Machine: {} × {} logical CPUs, {} RAM, kernel {}, {}, cgroup {}. Source: {}{}. {}.\n",
        res.status,
        res.cells.len(),
        res.suspect_cells,
        res.failed_cells,
        if run.quick { ", `--quick` subset" } else { "" },
        e.hardware.cpu_model,
        e.hardware.logical_cpus,
        mib_cell(e.hardware.memory_total_bytes as f64),
        e.os.kernel,
        e.hardware.virtualization,
        e.cgroup.version,
        e.source
            .git_commit
            .as_deref()
            .map_or("unknown commit", |c| &c[..c.len().min(12)]),
        if e.source.git_dirty == Some(true) {
            " (dirty)"
        } else {
            ""
        },
        e.provenance.note,
    );
    if !e.provenance_warnings.is_empty() {
        let _ = writeln!(
            o,
            "**Provenance warnings** (binaries vs checkout): {}.\n",
            e.provenance_warnings.join("; ")
        );
    }
}

fn how_to_read(o: &mut String, res: &ResultsFile) {
    let saturated = res.cells.iter().any(|c| c.generator_saturated);
    let _ = writeln!(o, "## How to read this\n");
    let _ = writeln!(
        o,
        "- Server and generator share one machine; closed-loop req/s measures loopback and the generator as well as the runtime{}. The comparisons valid on any machine come first: **server CPU µs per request** and **latency at the same offered rate** (open loop).",
        if saturated {
            " — and in cells marked † the generator saturated, so req/s is a lower bound"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "- Closed-loop cells: median req/s over repetitions, ± half-width of the 95 % Student-t CI, p99 latency (median over repetitions), server CPU µs/request."
    );
    let _ = writeln!(
        o,
        "- † generator saturated · ⚠ suspect (reasons at the end) · ✗ failed · n/a profile unsupported here.\n"
    );
}

/// Open-loop tables first (valid on any machine), then closed loop.
fn load_tables(o: &mut String, res: &ResultsFile) {
    // Churn cells have their own table (`export::churn`).
    let cells: Vec<CellSummary> = res
        .cells
        .iter()
        .filter(|c| c.churn.is_none())
        .cloned()
        .collect();
    let groups = group::groups(&cells);
    if groups.iter().any(|g| g.open) {
        let _ = writeln!(
            o,
            "## Equal offered load (open loop): server CPU per request and latency\n"
        );
        for g in groups.iter().filter(|g| g.open) {
            table(o, g, open_cell);
        }
    }
    if groups.iter().any(|g| !g.open) {
        let _ = writeln!(o, "## Closed loop: throughput, p99 and CPU per request\n");
        for g in groups.iter().filter(|g| !g.open) {
            table(o, g, closed_cell);
        }
    }
}

/// One row per (service, profile): start-up over every start, idle and peak RSS.
fn startup_and_memory(o: &mut String, res: &ResultsFile, runtimes: &BTreeMap<String, String>) {
    let _ = writeln!(o, "## Start-up and memory\n");
    let _ = writeln!(
        o,
        "| service | profile | exec → first 200 (median, min–max, n) | idle RSS | peak RSS under load | runtime / driver | deviations |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|");
    let mut seen = BTreeSet::new();
    for c in &res.cells {
        if !seen.insert((c.service.clone(), c.profile.clone())) {
            continue;
        }
        let same: Vec<&CellSummary> = res
            .cells
            .iter()
            .filter(|x| x.service == c.service && x.profile == c.profile)
            .collect();
        let starts: Vec<f64> = same
            .iter()
            .filter_map(|x| x.startup_us.as_ref())
            .flat_map(|s| [s.median])
            .collect();
        let su = same.iter().filter_map(|x| x.startup_us.as_ref());
        let n: u32 = su.clone().map(|s| s.n).sum();
        let min = su.clone().map(|s| s.min).fold(f64::INFINITY, f64::min);
        let max = su.map(|s| s.max).fold(0.0, f64::max);
        let med = crate::results::stats::median(&starts);
        let idle = crate::results::stats::median(
            &same
                .iter()
                .filter_map(|x| x.idle_rss_bytes.as_ref().map(|s| s.median))
                .collect::<Vec<_>>(),
        );
        let peak = same.iter().filter_map(|x| x.rss_peak_bytes).max();
        let rt = runtimes.get(&c.service).map_or("–", String::as_str);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} |",
            c.service,
            c.profile,
            med.map_or("–".into(), |m| format!(
                "{} ({}–{}, n={n})",
                micros_cell(m),
                micros_cell(min),
                micros_cell(max)
            )),
            idle.map_or("–".into(), mib_cell),
            peak.map_or("–".into(), |p| mib_cell(p as f64)),
            rt,
            if c.deviations.is_empty() {
                "–".into()
            } else {
                c.deviations.join(", ")
            },
        );
    }
    let _ = writeln!(o);
}

fn drift(o: &mut String, res: &ResultsFile) {
    if let Some(d) = &res.drift {
        let _ = writeln!(o, "## Drift\n");
        let _ = writeln!(
            o,
            "Reference cell `{}` re-run at the end: req/s {} · CPU/request {}. {}\n",
            d.key,
            d.requests_per_s_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.cpu_us_per_request_drift_pct
                .map_or("–".into(), |p| format!("{p:+.1} %")),
            d.note
        );
    }
}

fn suspects(o: &mut String, res: &ResultsFile) {
    let suspects: Vec<&CellSummary> = res
        .cells
        .iter()
        .filter(|c| c.suspect || c.failure.is_some())
        .collect();
    if !suspects.is_empty() {
        let _ = writeln!(o, "## Suspect, failed and unsupported cells\n");
        for c in suspects {
            let mut why = c.suspect_reasons.clone();
            if let Some(f) = &c.failure {
                why.insert(0, f.clone());
            }
            let _ = writeln!(o, "- `{}`: {}", c.key, why.join("; "));
        }
        let _ = writeln!(o);
    }
}
