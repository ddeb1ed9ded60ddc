//! The README's reference section: one table per service for the headline scenario and
//! profile, generated from results.json (never hand-typed), plus links to two plots.

use std::fmt::Write as _;
use std::path::Path;

use crate::results::schema::{CellStatus, CellSummary};
use crate::results::set::ResultSet;
use crate::results::stats;
use crate::results::units::{Unit, mib_cell, micros_brief, value};

use super::charts::{Chart, Kind};
use super::data::groups;
use crate::readme::link;

/// The scenario named "ping" if there is one, else the first closed-loop scenario; its
/// first profile.
fn headline_group(set: &ResultSet) -> Option<(String, String)> {
    let closed: Vec<_> = groups(set).into_iter().filter(|g| !g.open).collect();
    let g = closed
        .iter()
        .find(|g| g.scenario == "ping")
        .or_else(|| closed.first())?;
    Some((g.scenario.clone(), g.profile.clone()))
}

/// Markdown for the reference section. `readme_dir` is where links are relative to; the
/// plots must already be written (links are checked against the files).
pub fn render(set: &ResultSet, charts: &[Chart], readme_dir: &Path) -> anyhow::Result<String> {
    let (scenario, profile) = headline_group(set).ok_or_else(|| {
        anyhow::anyhow!(
            "run {} has no closed-loop cells to headline",
            set.results.run_id
        )
    })?;
    let cells: Vec<&CellSummary> = set
        .results
        .cells
        .iter()
        .filter(|c| c.scenario == scenario && c.profile == profile)
        .collect();
    let mut o = String::new();
    let machine = set.run.as_ref().map_or_else(
        || "an unrecorded machine (no run.json)".to_string(),
        |r| {
            let h = &r.environment.hardware;
            format!(
                "{} × {} logical CPUs ({})",
                h.cpu_model, h.logical_cpus, h.virtualization
            )
        },
    );
    let reps = cells.iter().map(|c| c.n).max().unwrap_or(0);
    let results_md = set.dir.join("results.md");
    let _ = writeln!(
        o,
        "Run `{}` on {machine}; scenario `{scenario}`, profile `{profile}`, {reps} repetitions per cell. \
Peak = the load level with the highest mean req/s; ± = half-width of the 95 % Student-t CI; \
† generator saturated (a lower bound), ⚠ suspect.{}\n",
        set.results.run_id,
        if results_md.is_file() {
            format!(
                " All cells: [results.md]({}).",
                link(readme_dir, &results_md)?
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(
        o,
        "| service | peak req/s | at | p99 at peak | server CPU/request at peak | start-up (median) | idle RSS | peak RSS |"
    );
    let _ = writeln!(o, "|---|---:|---|---:|---:|---:|---:|---:|");
    let mut services: Vec<&str> = Vec::new();
    for c in &cells {
        if !services.contains(&c.service.as_str()) {
            services.push(&c.service);
        }
    }
    for s in services {
        let mine: Vec<&&CellSummary> = cells.iter().filter(|c| c.service == s).collect();
        let ok = mine.iter().filter(|c| {
            c.n > 0
                && matches!(
                    c.status,
                    None | Some(CellStatus::Ok) | Some(CellStatus::Partial)
                )
        });
        let peak = ok.filter(|c| c.requests_per_s.is_some()).max_by(|a, b| {
            let m = |c: &CellSummary| c.requests_per_s.as_ref().map_or(0.0, |r| r.mean);
            m(a).total_cmp(&m(b))
        });
        let startup = stats::median(
            &mine
                .iter()
                .filter_map(|c| c.startup_us.as_ref().map(|s| s.median))
                .collect::<Vec<_>>(),
        );
        let idle = stats::median(
            &mine
                .iter()
                .filter_map(|c| c.idle_rss_bytes.as_ref().map(|s| s.median))
                .collect::<Vec<_>>(),
        );
        let peak_rss = mine.iter().filter_map(|c| c.rss_peak_bytes).max();
        let dash = || "–".to_string();
        let (rate, at, p99, cpu) = match peak {
            Some(c) => {
                let r = c.requests_per_s.as_ref().map_or_else(dash, |r| {
                    let half = match (r.ci95_low, r.ci95_high) {
                        (Some(lo), Some(hi)) if r.mean > 0.0 => {
                            format!(" ± {:.1} %", (hi - lo) / 2.0 / r.mean * 100.0)
                        }
                        _ => String::new(),
                    };
                    let marks = format!(
                        "{}{}",
                        if c.generator_saturated { " †" } else { "" },
                        if c.suspect { " ⚠" } else { "" }
                    );
                    format!("{}{half}{marks}", value(Unit::PerSecond, r.mean))
                });
                (
                    r,
                    c.level.clone(),
                    c.latency
                        .as_ref()
                        .map_or_else(dash, |l| micros_brief(l.p99_us as f64)),
                    c.server_cpu_us_per_request
                        .as_ref()
                        .map_or_else(dash, |s| format!("{:.1} µs", s.mean)),
                )
            }
            None => (
                mine.iter()
                    .find_map(|c| c.failure.clone())
                    .map_or_else(|| "no data".into(), |f| format!("✗ {f}")),
                dash(),
                dash(),
                dash(),
            ),
        };
        let _ = writeln!(
            o,
            "| {s} | {rate} | {at} | {p99} | {cpu} | {} | {} | {} |",
            startup.map_or_else(dash, micros_brief),
            idle.map_or_else(dash, mib_cell),
            peak_rss.map_or_else(dash, |b| mib_cell(b as f64)),
        );
    }
    let _ = writeln!(o);
    let pick = |kind: Kind| {
        charts.iter().find(|c| {
            c.kind == kind
                && c.scenario.as_deref() == Some(scenario.as_str())
                && c.profile == profile
        })
    };
    for chart in [pick(Kind::Throughput), pick(Kind::Spectrum)]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(
            o,
            "![{}]({})\n",
            chart.title,
            link(readme_dir, &set.dir.join(&chart.file))?
        );
    }
    Ok(o)
}
