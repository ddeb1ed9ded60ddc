//! results.md: one page a human reads. It leads with the metrics valid on any machine
//! (server CPU per request and latency at equal offered load), then throughput tables
//! (services as rows, load levels as columns) with generator-saturated cells marked.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::results::schema::{CellResult, CellStatus, CellSummary, ResultsFile, RunRecord};

fn fmt_rate(x: f64) -> String {
    if x >= 10_000.0 {
        format!("{:.0}k", x / 1000.0)
    } else if x >= 1000.0 {
        format!("{:.1}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

fn fmt_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.0} µs")
    }
}

/// Bytes as MiB with one decimal (also the README headline's format).
pub(crate) fn mib(b: f64) -> String {
    format!("{:.1} MiB", b / 1_048_576.0)
}

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
        s += &fmt_rate(r.median);
        if let (Some(lo), Some(hi)) = (r.ci95_low, r.ci95_high) {
            let _ = write!(s, " ±{:.0}%", (hi - lo) / 2.0 / r.mean.max(1e-9) * 100.0);
        }
    }
    if let Some(l) = &c.latency {
        let _ = write!(s, " · p99 {}", fmt_us(l.p99_us as f64));
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
            fmt_us(l.p50_us as f64),
            fmt_us(l.p99_us as f64)
        );
    }
    s + &marks(c)
}

/// (scenario, profile) pairs in first-seen order, with the level labels of each.
/// (scenario, profile, level labels, cells).
type Table<'a> = (String, String, Vec<String>, Vec<&'a CellSummary>);

fn tables(cells: &[CellSummary], open: bool) -> Vec<Table<'_>> {
    let mut out: Vec<Table> = Vec::new();
    for c in cells
        .iter()
        .filter(|c| c.offered_rate_per_s.is_some() == open)
    {
        let i = match out
            .iter()
            .position(|t| t.0 == c.scenario && t.1 == c.profile)
        {
            Some(i) => i,
            None => {
                out.push((c.scenario.clone(), c.profile.clone(), vec![], vec![]));
                out.len() - 1
            }
        };
        if !out[i].2.contains(&c.level) {
            out[i].2.push(c.level.clone());
        }
        out[i].3.push(c);
    }
    out
}

fn table(
    out: &mut String,
    title: &str,
    levels: &[String],
    cells: &[&CellSummary],
    f: fn(&CellSummary) -> String,
) {
    let _ = writeln!(out, "### {title}\n");
    let _ = writeln!(out, "| service | {} |", levels.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(levels.len()));
    let mut services: Vec<&str> = Vec::new();
    for c in cells {
        if !services.contains(&c.service.as_str()) {
            services.push(&c.service);
        }
    }
    for s in services {
        let row: Vec<String> = levels
            .iter()
            .map(|l| {
                cells
                    .iter()
                    .find(|c| c.service == s && &c.level == l)
                    .map_or_else(|| "–".into(), |c| f(c))
            })
            .collect();
        let _ = writeln!(out, "| {s} | {} |", row.join(" | "));
    }
    let _ = writeln!(out);
}

/// service → "runtime version / io driver" from the first start-up line seen in `cells`, the
/// `runtimes` argument of [`render`]; `matrix run` and `matrix report` both build it here.
pub fn runtimes_by_service<'a>(
    cells: impl IntoIterator<Item = &'a CellResult>,
) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for c in cells {
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

/// `runtimes`: service → "runtime version / io driver" from its start-up line.
pub fn render(run: &RunRecord, res: &ResultsFile, runtimes: &BTreeMap<String, String>) -> Vec<u8> {
    let mut o = String::new();
    let e = &run.environment;
    let _ = writeln!(o, "# pingmatrix results — {}\n", run.run_id);
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
        mib(e.hardware.memory_total_bytes as f64),
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

    let open = tables(&res.cells, true);
    if !open.is_empty() {
        let _ = writeln!(
            o,
            "## Equal offered load (open loop): server CPU per request and latency\n"
        );
        for (sc, pr, levels, cells) in &open {
            table(
                &mut o,
                &format!("{sc} · profile {pr}"),
                levels,
                cells,
                open_cell,
            );
        }
    }
    let closed = tables(&res.cells, false);
    if !closed.is_empty() {
        let _ = writeln!(o, "## Closed loop: throughput, p99 and CPU per request\n");
        for (sc, pr, levels, cells) in &closed {
            table(
                &mut o,
                &format!("{sc} · profile {pr}"),
                levels,
                cells,
                closed_cell,
            );
        }
    }

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
        let med = crate::stats::median(&starts);
        let idle = crate::stats::median(
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
                fmt_us(m),
                fmt_us(min),
                fmt_us(max)
            )),
            idle.map_or("–".into(), mib),
            peak.map_or("–".into(), |p| mib(p as f64)),
            rt,
            if c.deviations.is_empty() {
                "–".into()
            } else {
                c.deviations.join(", ")
            },
        );
    }
    let _ = writeln!(o);
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
    let _ = writeln!(
        o,
        "Per-cell detail (every repetition's full generator report, samples, limits): `cells/<key>.json`; environment and plan: `run.json`."
    );
    o.into_bytes()
}
