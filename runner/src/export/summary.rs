//! The few lines `matrix run` ends with, the way hyperfine ends with its summary: how many
//! cells ended how, the headline rows (the "ping" scenario, or the first closed-loop one, at
//! its largest connection count, first profile), and where the full page is. The figures are
//! the ones results.md, the README headline and the page show: means over repetitions with
//! their 95 % interval, the ceiling multiple (`group::ceiling_multiple`), and where the level
//! counted, its rank by counted cost (`counted_rank`), ties as ties.

use std::fmt::Write as _;
use std::path::Path;

use crate::results::counted_rank::{self, Cost, Place};
use crate::results::group::connections;
use crate::results::group::{CEILING, ceiling_multiple};
use crate::results::schema::{CellStatus, CellSummary, ResultsFile, RunRecord};
use crate::results::trust;
use crate::results::units::{micros_cell, rate_with_ci};

/// The headline rows' position ("ping / pinned / c64"), its cells in order with their places,
/// and whether the level counted.
type Headline<'a> = (String, Vec<(&'a CellSummary, Option<Place>)>, bool);

/// The cells of the headline row set: scenario, profile and level, and its cells in rank by
/// counted cost where the level counted (each with its place), else by mean req/s, fastest
/// first.
fn headline(res: &ResultsFile) -> Option<Headline<'_>> {
    let closed = |c: &&CellSummary| c.offered_rate_per_s.is_none() && c.churn.is_none();
    let first = res
        .cells
        .iter()
        .filter(closed)
        .find(|c| c.scenario == "ping")
        .or_else(|| res.cells.iter().find(closed))?;
    let (scenario, profile) = (&first.scenario, &first.profile);
    let level = res
        .cells
        .iter()
        .filter(closed)
        .filter(|c| &c.scenario == scenario && &c.profile == profile)
        .max_by_key(|c| connections(&c.level).unwrap_or(0))?
        .level
        .clone();
    let mut rows: Vec<&CellSummary> = res
        .cells
        .iter()
        .filter(closed)
        .filter(|c| &c.scenario == scenario && &c.profile == profile && c.level == level)
        .collect();
    let rps = |c: &CellSummary| c.requests_per_s.as_ref().map_or(-1.0, |s| s.mean);
    rows.sort_by(|a, b| rps(b).total_cmp(&rps(a)).then(a.service.cmp(&b.service)));
    let costs: Vec<Cost> = rows.iter().map(|c| Cost::of(c.counted.as_ref())).collect();
    let counted = costs.iter().any(|k| *k != Cost::default());
    let ranked = if counted {
        counted_rank::rank(&costs)
            .into_iter()
            .map(|(i, p)| (rows[i], p))
            .collect()
    } else {
        rows.into_iter().map(|c| (c, None)).collect()
    };
    Some((format!("{scenario} / {profile} / {level}"), ranked, counted))
}

fn status_word(s: Option<CellStatus>) -> &'static str {
    match s {
        Some(CellStatus::Ok) => "ok",
        Some(CellStatus::Failed) => "failed",
        Some(CellStatus::Unsupported) => "unsupported",
        Some(CellStatus::Interrupted) => "interrupted",
        Some(CellStatus::Partial) => "partial",
        None => "not run",
    }
}

/// The summary text for a finished run whose page is `results_md`.
pub fn text(res: &ResultsFile, run: Option<&RunRecord>, results_md: &Path) -> String {
    let mut o = String::new();
    let mut by_status: Vec<(&str, usize)> = Vec::new();
    for c in &res.cells {
        let w = status_word(c.status);
        match by_status.iter_mut().find(|(s, _)| *s == w) {
            Some((_, n)) => *n += 1,
            None => by_status.push((w, 1)),
        }
    }
    let counts: Vec<String> = by_status.iter().map(|(s, n)| format!("{n} {s}")).collect();
    let suspect = res.cells.iter().filter(|c| c.suspect).count();
    let _ = writeln!(
        o,
        "\nSummary: {} cells ({}), {suspect} suspect",
        res.cells.len(),
        counts.join(", ")
    );
    let _ = writeln!(o, "  {}", trust::line(res, run));
    if let Some((group, rows, counted)) = headline(res) {
        let instructions = (rows.iter()).any(|r| {
            r.0.counted
                .as_ref()
                .is_some_and(|k| k.instructions.is_some())
        });
        let order = if counted && instructions {
            "ranked by counted cost: instructions, then syscalls per request; = a tie the counts cannot break"
        } else if counted {
            "ranked by counted cost: syscalls per request (no instruction count at this level); = a tie"
        } else {
            "by mean req/s, not a ranking: results.md says what the run can tell apart"
        };
        let _ = writeln!(
            o,
            "  {group} (means ± 95 % CI; {order}; † generator-limited, ⚠ suspect):"
        );
        let width = rows.iter().map(|c| c.0.service.len()).max().unwrap_or(0);
        let ceiling = rows.iter().map(|c| c.0).find(|c| c.service == CEILING);
        let label = |p: Option<Place>| p.map_or_else(|| "–".into(), |p| p.label());
        let lw = rows
            .iter()
            .map(|r| label(r.1).chars().count())
            .max()
            .unwrap_or(0);
        for (c, place) in rows {
            let mark = match (c.generator_saturated, c.suspect) {
                (true, _) => " †",
                (false, true) => " ⚠",
                _ => "",
            };
            let cpu = c
                .server_cpu_us_per_request
                .as_ref()
                .map_or("–".into(), |s| {
                    let x = ceiling.and_then(|e| ceiling_multiple(c, e));
                    format!(
                        "{:.2} µs{}",
                        s.mean,
                        x.map_or_else(String::new, |x| format!(" ({x:.2}× epoll)"))
                    )
                });
            let line = match (&c.requests_per_s, c.status) {
                (Some(r), Some(CellStatus::Ok)) => format!(
                    "{:>11} req/s  p99 {:>7}  CPU/request {cpu}",
                    rate_with_ci(r),
                    c.latency
                        .as_ref()
                        .map_or("–".into(), |l| micros_cell(l.p99_us as f64)),
                ),
                _ => status_word(c.status).to_string(),
            };
            let place = if counted {
                format!("{:<lw$}  ", label(place))
            } else {
                String::new()
            };
            let _ = writeln!(o, "    {place}{:<width$}  {line}{mark}", c.service);
        }
    }
    for c in res.cells.iter().filter(|c| c.failure.is_some()).take(5) {
        let _ = writeln!(
            o,
            "  {} {}: {}",
            status_word(c.status),
            c.key,
            c.failure.as_deref().unwrap_or_default()
        );
    }
    let _ = writeln!(
        o,
        "  intervals, verdicts and every cell: {}",
        results_md.display()
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::Stat;

    fn stat(median: f64) -> Stat {
        Stat {
            n: 3,
            mean: median,
            median,
            stdev: None,
            cv: None,
            ci95_low: None,
            ci95_high: None,
            min: median,
            max: median,
        }
    }

    fn cell(service: &str, level: &str, rps: f64, status: CellStatus) -> CellSummary {
        let mut c: CellSummary = serde_json::from_value(serde_json::json!({
            "key": format!("{service}.ping.{level}.default"), "service": service,
            "scenario": "ping", "level": level, "profile": "default", "status": null, "n": 3,
            "requests_per_s": null, "latency": null, "startup_us": null, "idle_rss_bytes": null,
            "rss_mean_bytes": null, "rss_peak_bytes": null, "server_cpu_us_per_request": null,
            "loadgen_cpu_us_per_request": null, "offered_rate_per_s": null,
            "generator_saturated": false, "errors": 0, "timeouts": 0,
            "cpu_throttled_periods": null, "oom_kills": null, "verification_passed": true,
            "deviations": [], "suspect": false, "suspect_reasons": [], "failure": null
        }))
        .expect("a cell summary");
        c.status = Some(status);
        c.requests_per_s = Some(stat(rps));
        c
    }

    #[test]
    fn counts_statuses_and_lists_the_largest_level_fastest_first() {
        let mut failed = cell("ping-b", "c64", 0.0, CellStatus::Failed);
        failed.failure = Some("spawn: no such file".into());
        failed.requests_per_s = None;
        let mut suspect = cell("ping-c", "c64", 90_000.0, CellStatus::Ok);
        suspect.suspect = true;
        let res: ResultsFile = ResultsFile {
            schema_version: 1,
            run_id: "r".into(),
            status: crate::results::schema::RunStatus::Completed,
            replay_of: None,
            cells: vec![
                cell("ping-a", "c1", 9_000.0, CellStatus::Ok),
                cell("ping-a", "c64", 120_000.0, CellStatus::Ok),
                failed,
                suspect,
            ],
            drift: None,
            failed_cells: 1,
            suspect_cells: 1,
            baseline: None,
            verdicts: vec![],
            calibration: None,
            metrics: vec![],
        };
        let t = text(&res, None, Path::new("results/r/results.md"));
        assert!(t.contains("4 cells (3 ok, 1 failed), 1 suspect"), "{t}");
        assert!(t.contains("ping / default / c64"), "{t}");
        let a = t.find("ping-a ").expect("ping-a row");
        let c = t.find("ping-c ").expect("ping-c row");
        assert!(a < c, "fastest first: {t}");
        assert!(t.contains("120k req/s") && t.contains(" ⚠"), "{t}");
        assert!(!t.contains("9.0k"), "only the largest level: {t}");
        assert!(
            t.contains("failed ping-b.ping.c64.default: spawn: no such file"),
            "{t}"
        );
        assert!(t.ends_with("every cell: results/r/results.md\n"), "{t}");
    }

    #[test]
    fn level_connections() {
        assert_eq!(connections("c64"), Some(64));
        assert_eq!(connections("c64-d8"), Some(64));
        assert_eq!(connections("r20000"), None);
    }
}
