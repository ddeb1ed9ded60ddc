//! Which charts a result set gets, and the data each one shows. Pure: returns SVG strings
//! with their file names; `report::cmd` writes them.

use std::collections::BTreeMap;

use crate::results::schema::{CellStatus, CellSummary};
use crate::results::set::ResultSet;
use crate::results::stats;

use crate::results::group::{Group, first_seen};

use super::data::{self, load_x, merge, rep_latencies, slug};
use super::{bars, open_loop, spectrum, throughput};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Throughput,
    Spectrum,
    OpenLoop,
    Startup,
    Memory,
}

#[derive(Debug, Clone)]
pub struct Chart {
    pub kind: Kind,
    /// Path relative to the run directory, e.g. "plots/throughput-ping-pinned.svg".
    pub file: String,
    pub title: String,
    pub scenario: Option<String>,
    pub profile: String,
    pub svg: String,
}

fn measured(c: &CellSummary) -> bool {
    c.n > 0
        && matches!(
            c.status,
            None | Some(CellStatus::Ok) | Some(CellStatus::Partial)
        )
}

/// Every chart for the set. `latency_level`: the level label for the spectra (default: the
/// highest level every service of the group reached).
pub fn all(set: &ResultSet, latency_level: Option<&str>) -> anyhow::Result<Vec<Chart>> {
    if let Some(w) = latency_level {
        let levels = first_seen(set.results.cells.iter().map(|c| &c.level));
        anyhow::ensure!(
            levels.iter().any(|l| l == w),
            "--latency-level {w}: no cell of this run has that level (levels: {})",
            levels.join(", ")
        );
    }
    let mut out = Vec::new();
    let groups = data::groups(set);
    for g in &groups {
        if !g.open {
            if let Some(c) = throughput_chart(set, g)? {
                out.push(c);
            }
        } else if let Some(c) = open_loop_chart(set, g)? {
            out.push(c);
        }
        if let Some(c) = spectrum_chart(set, g, latency_level)? {
            out.push(c);
        }
    }
    for p in first_seen(set.results.cells.iter().map(|c| &c.profile)) {
        out.extend(startup_chart(set, &p)?);
        out.extend(memory_chart(set, &p)?);
    }
    Ok(out)
}

/// Per service of the group (first-seen order), the points `point` takes from its measured
/// cells; services without a single point are left out rather than drawn as empty lines.
fn per_service<P>(g: &Group, point: impl Fn(&CellSummary) -> Option<P>) -> Vec<(String, Vec<P>)> {
    g.services()
        .into_iter()
        .map(|service| {
            let points = g
                .cells
                .iter()
                .filter(|c| c.service == service && measured(c))
                .filter_map(|c| point(c))
                .collect();
            (service, points)
        })
        .filter(|(_, points): &(String, Vec<P>)| !points.is_empty())
        .collect()
}

/// `plots/<kind>-<part>-<part>….svg`, each part slugged.
fn plot_file(kind: &str, parts: &[&str]) -> String {
    let mut file = format!("plots/{kind}");
    for p in parts {
        file.push('-');
        file.push_str(&slug(p));
    }
    file + ".svg"
}

/// A chart of one (scenario, profile) group.
fn group_chart(kind: Kind, g: &Group, file: String, title: String, svg: String) -> Chart {
    Chart {
        kind,
        file,
        title,
        scenario: Some(g.scenario.clone()),
        profile: g.profile.clone(),
        svg,
    }
}

/// A chart of one profile across scenarios.
fn profile_chart(kind: Kind, profile: &str, file: String, title: String, svg: String) -> Chart {
    Chart {
        kind,
        file,
        title,
        scenario: None,
        profile: profile.to_string(),
        svg,
    }
}

fn throughput_chart(set: &ResultSet, g: &Group) -> anyhow::Result<Option<Chart>> {
    // No interval from fewer than 3 repetitions (a 2-sample t interval spans ±12.7
    // standard deviations: it says "too few", not "this uncertain"), none below 0 req/s.
    let few = std::cell::Cell::new(false);
    let series: Vec<throughput::ThroughputLine> = per_service(g, |c| {
        let s = c.requests_per_s.as_ref()?;
        let ci = (s.n >= 3).then_some((s.ci95_low, s.ci95_high));
        few.set(few.get() || (s.n < 3 && s.ci95_low.is_some()));
        Some(throughput::Point {
            x: load_x(set, c)?,
            y: s.mean,
            lo: ci.and_then(|c| c.0).unwrap_or(s.mean).max(0.0),
            hi: ci.and_then(|c| c.1).unwrap_or(s.mean),
        })
    })
    .into_iter()
    .map(|(service, points)| throughput::ThroughputLine { service, points })
    .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "{} · profile {}: throughput vs connections{}",
        g.scenario,
        g.profile,
        if few.get() {
            " (no interval: fewer than 3 repetitions)"
        } else {
            ""
        }
    );
    let svg = throughput::render(&title, &series)?;
    let file = plot_file("throughput", &[&g.scenario, &g.profile]);
    Ok(Some(group_chart(Kind::Throughput, g, file, title, svg)))
}

fn open_loop_chart(set: &ResultSet, g: &Group) -> anyhow::Result<Option<Chart>> {
    let series: Vec<open_loop::LatencyLine> = per_service(g, |c| {
        let l = c.latency.as_ref()?;
        let p99 = l.p99_us as f64;
        // The spread the run saw: each repetition's own p99 (when the cell file is here).
        let reps: Vec<f64> = set
            .cells
            .get(&c.key)
            .map(|cell| {
                cell.reps
                    .iter()
                    .filter(|r| r.rep > 0)
                    .map(|r| r.report.latency_us.p99 as f64)
                    .collect()
            })
            .unwrap_or_default();
        Some(open_loop::P99 {
            rate: load_x(set, c)?,
            p99,
            lo: reps.iter().copied().fold(p99, f64::min),
            hi: reps.iter().copied().fold(p99, f64::max),
        })
    })
    .into_iter()
    .map(|(service, points)| open_loop::LatencyLine { service, points })
    .collect();
    if series.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "{} · profile {}: p99 latency vs offered rate (open loop)",
        g.scenario, g.profile
    );
    let svg = open_loop::render(&title, &series)?;
    let file = plot_file("open-loop", &[&g.scenario, &g.profile]);
    Ok(Some(group_chart(Kind::OpenLoop, g, file, title, svg)))
}

/// The level for a group's spectrum: the requested one if the group has it, else the
/// highest load every service with histograms reached.
fn spectrum_level(set: &ResultSet, g: &Group, wanted: Option<&str>) -> Option<String> {
    let with_hist: Vec<&&CellSummary> = g
        .cells
        .iter()
        .filter(|c| measured(c) && set.cells.contains_key(&c.key))
        .collect();
    if let Some(w) = wanted
        && with_hist.iter().any(|c| c.level == w)
    {
        return Some(w.to_string());
    }
    let services = g.services();
    let mut levels: Vec<(f64, String)> = with_hist
        .iter()
        .filter_map(|c| Some((load_x(set, c)?, c.level.clone())))
        .filter(|(_, l)| {
            services
                .iter()
                .all(|s| with_hist.iter().any(|c| &c.service == s && &c.level == l))
        })
        .collect();
    levels.sort_by(|a, b| a.0.total_cmp(&b.0));
    levels.pop().map(|l| l.1)
}

fn spectrum_chart(
    set: &ResultSet,
    g: &Group,
    wanted: Option<&str>,
) -> anyhow::Result<Option<Chart>> {
    let Some(level) = spectrum_level(set, g, wanted) else {
        return Ok(None);
    };
    let mut series = Vec::new();
    let mut reps = 0;
    for c in g.cells.iter().filter(|c| c.level == level && measured(c)) {
        let Some(cell) = set.cells.get(&c.key) else {
            continue;
        };
        let per_rep = rep_latencies(cell)?;
        if let Some(hist) = merge(&per_rep).map_err(|e| anyhow::anyhow!("cell {}: {e}", c.key))? {
            reps = reps.max(cell.reps.iter().filter(|r| r.rep > 0).count());
            series.push(spectrum::Spectrum {
                service: c.service.clone(),
                hist,
                reps: per_rep,
            });
        }
    }
    if series.is_empty() {
        return Ok(None);
    }
    let title = format!(
        "{} · profile {} · {}: latency percentiles ({} reps merged{})",
        g.scenario,
        g.profile,
        level,
        reps,
        if reps < 2 { "; no band from one" } else { "" }
    );
    let svg = spectrum::render(&title, &series)?;
    let file = plot_file("latency", &[&g.scenario, &g.profile, &level]);
    Ok(Some(group_chart(Kind::Spectrum, g, file, title, svg)))
}

/// Services of a profile in first-seen order.
fn services_of(set: &ResultSet, profile: &str) -> Vec<String> {
    first_seen(
        set.results
            .cells
            .iter()
            .filter(|c| c.profile == profile)
            .map(|c| &c.service),
    )
}

fn startup_chart(set: &ResultSet, profile: &str) -> anyhow::Result<Option<Chart>> {
    let rows: Vec<bars::Startup> = services_of(set, profile)
        .into_iter()
        .filter_map(|service| {
            let cells = set
                .results
                .cells
                .iter()
                .filter(|c| c.service == service && c.profile == profile);
            // Every start of every cell when the cell files are here; else the summaries.
            let raw: Vec<f64> = cells
                .clone()
                .filter_map(|c| set.cells.get(&c.key))
                .flat_map(|c| c.starts.iter().filter_map(|s| s.first_200_us))
                .map(|x| x as f64)
                .collect();
            if !raw.is_empty() {
                return Some(bars::Startup {
                    service: service.to_string(),
                    median_us: stats::median(&raw)?,
                    min_us: raw.iter().copied().fold(f64::INFINITY, f64::min),
                    max_us: raw.iter().copied().fold(0.0, f64::max),
                    n: raw.len(),
                });
            }
            let st: Vec<_> = cells.filter_map(|c| c.startup_us.as_ref()).collect();
            Some(bars::Startup {
                service: service.to_string(),
                median_us: stats::median(&st.iter().map(|s| s.median).collect::<Vec<_>>())?,
                min_us: st.iter().map(|s| s.min).fold(f64::INFINITY, f64::min),
                max_us: st.iter().map(|s| s.max).fold(0.0, f64::max),
                n: st.iter().map(|s| s.n as usize).sum(),
            })
        })
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let title = format!("profile {profile}: start-up time (exec → first 200)");
    let svg = bars::startup(&title, &rows)?;
    let file = plot_file("startup", &[profile]);
    Ok(Some(profile_chart(
        Kind::Startup,
        profile,
        file,
        title,
        svg,
    )))
}

fn memory_chart(set: &ResultSet, profile: &str) -> anyhow::Result<Option<Chart>> {
    let mut rows = Vec::new();
    for service in services_of(set, profile) {
        let cells: Vec<&CellSummary> = set
            .results
            .cells
            .iter()
            .filter(|c| c.service == service && c.profile == profile)
            .collect();
        let idle: Vec<f64> = cells
            .iter()
            .filter_map(|c| c.idle_rss_bytes.as_ref().map(|s| s.median))
            .collect();
        let peak = cells.iter().filter_map(|c| c.rss_peak_bytes).max();
        if idle.is_empty() && peak.is_none() {
            continue;
        }
        rows.push(bars::Memory {
            service: service.to_string(),
            idle_bytes: stats::median(&idle),
            peak_bytes: peak.map(|p| p as f64),
        });
    }
    if rows.is_empty() {
        return Ok(None);
    }
    let title = format!("profile {profile}: memory (idle RSS, peak RSS under load)");
    let svg = bars::memory(&title, &rows)?;
    let file = plot_file("memory", &[profile]);
    Ok(Some(profile_chart(Kind::Memory, profile, file, title, svg)))
}

/// Charts grouped for a Markdown section: (heading, charts) in a stable order.
pub fn by_kind(charts: &[Chart]) -> BTreeMap<u8, (&'static str, Vec<&Chart>)> {
    let mut m: BTreeMap<u8, (&'static str, Vec<&Chart>)> = BTreeMap::new();
    for c in charts {
        let (order, name) = match c.kind {
            Kind::Throughput => (0, "Throughput vs connections (closed loop)"),
            Kind::OpenLoop => (1, "Latency vs offered rate (open loop)"),
            Kind::Spectrum => (2, "Latency percentile spectra"),
            Kind::Startup => (3, "Start-up time"),
            Kind::Memory => (4, "Memory"),
        };
        m.entry(order).or_insert((name, Vec::new())).1.push(c);
    }
    m
}
