//! The README's reference section: one table per service for the headline scenario and
//! profile, generated from results.json (never hand-typed), plus links to two plots.

use std::fmt::Write as _;
use std::path::Path;

use crate::results::difference::{NOISE_PCT, Verdict};
use crate::results::group::{CEILING, first_seen};
use crate::results::metric::Metric;
use crate::results::schema::{CellStatus, CellSummary, RunStatus, Stat};
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

/// Why `set` cannot headline the README: a run that did not complete (interrupted, or
/// still running) would show a partial matrix — "0 repetitions per cell", services missing —
/// as the reference figures.
pub fn refusal(set: &ResultSet) -> Option<String> {
    let status = set.results.status;
    (status != RunStatus::Completed).then(|| {
        format!(
            "run {} is {}, not completed: the README's reference section shows only a \
             completed run (finish it with `matrix run --resume {}`)",
            set.results.run_id,
            format!("{status:?}").to_lowercase(),
            set.dir.display()
        )
    })
}

/// Markdown for the reference section. `readme_dir` is where links are relative to; the
/// plots must already be written (links are checked against the files). Refuses a run that
/// did not complete ([`refusal`]).
pub fn render(set: &ResultSet, charts: &[Chart], readme_dir: &Path) -> anyhow::Result<String> {
    if let Some(why) = refusal(set) {
        anyhow::bail!(why);
    }
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
    let mut o = intro(set, &cells, &scenario, &profile, readme_dir)?;
    let judged = set
        .results
        .baseline
        .as_deref()
        .filter(|_| !set.results.verdicts.is_empty());
    let _ = write!(
        o,
        "| service | peak req/s | at | p99 at peak | server CPU/request at peak | start-up (median) | idle RSS | peak RSS |"
    );
    match judged {
        Some(b) => {
            let _ = writeln!(
                o,
                " req/s vs {b} at the same level |\n|---|---:|---|---:|---:|---:|---:|---:|---|"
            );
        }
        None => {
            let _ = writeln!(o, "\n|---|---:|---|---:|---:|---:|---:|---:|");
        }
    }
    for s in first_seen(cells.iter().map(|c| &c.service)) {
        let mine: Vec<&CellSummary> = cells.iter().copied().filter(|c| c.service == s).collect();
        let mut cols = row(&mine, &cells);
        if let Some(b) = judged {
            cols.push(against(set, &mine, b));
        }
        let _ = writeln!(o, "| {s} | {} |", cols.join(" | "));
    }
    let _ = writeln!(o);
    if let Some(b) = judged {
        sensitivity(&mut o, set, &cells, b);
    }
    counted(&mut o, &cells);
    plot_links(&mut o, set, charts, (&scenario, &profile), readme_dir)?;
    Ok(o)
}

/// Where the run counted: a small second table, each service's syscalls per request at every
/// counted level and its instructions per request where Valgrind counted them (medians over
/// repetitions; counts rank services where the timing columns cannot). Nothing otherwise.
fn counted(o: &mut String, cells: &[&CellSummary]) {
    let counted: Vec<&CellSummary> = cells
        .iter()
        .copied()
        .filter(|c| c.counted.is_some())
        .collect();
    if counted.is_empty() {
        return;
    }
    let levels = first_seen(counted.iter().map(|c| &c.level));
    let instructions = counted
        .iter()
        .any(|c| c.counted.as_ref().is_some_and(|k| k.instructions.is_some()));
    let _ = write!(
        o,
        "Counted cost per request (median over repetitions, ± per-repetition CV; docs/counted-cost.md):\n\n| service |"
    );
    for l in &levels {
        let _ = write!(o, " syscalls at {l} |");
    }
    if instructions {
        let _ = write!(o, " user-space instructions (c1) |");
    }
    let _ = write!(o, "\n|---|");
    for _ in 0..levels.len() + usize::from(instructions) {
        let _ = write!(o, "---:|");
    }
    let _ = writeln!(o);
    let stat = |s: Option<&Stat>, why: Option<&String>| match (s, why) {
        (Some(s), _) => match s.cv {
            Some(cv) if s.n > 1 => format!(
                "{} ±{:.1} %",
                crate::results::units::count(s.median),
                cv * 100.0
            ),
            _ => crate::results::units::count(s.median),
        },
        (None, Some(_)) => "unmeasured".into(),
        (None, None) => "–".into(),
    };
    for s in first_seen(counted.iter().map(|c| &c.service)) {
        let mine = |l: &str| {
            counted
                .iter()
                .find(|c| c.service == s && c.level == l)
                .and_then(|c| c.counted.as_ref())
        };
        let _ = write!(o, "| {s} |");
        for l in &levels {
            let k = mine(l);
            let cell = k.map_or_else(
                || "–".into(),
                |k| {
                    stat(
                        k.server.syscalls.as_ref(),
                        k.server.syscalls_unmeasured.as_ref(),
                    )
                },
            );
            let _ = write!(o, " {cell} |");
        }
        if instructions {
            let k = counted
                .iter()
                .filter(|c| c.service == s)
                .filter_map(|c| c.counted.as_ref())
                .find(|k| k.instructions.is_some() || k.instructions_unmeasured.is_some());
            let cell = k.map_or_else(
                || "–".into(),
                |k| stat(k.instructions.as_ref(), k.instructions_unmeasured.as_ref()),
            );
            let _ = write!(o, " {cell} |");
        }
        let _ = writeln!(o);
    }
    let _ = writeln!(o);
}

/// The service's req/s at its peak level against the baseline's at that level.
fn against(set: &ResultSet, mine: &[&CellSummary], baseline: &str) -> String {
    let Some(c) = peak(mine) else {
        return "–".into();
    };
    if c.service == baseline {
        return "(baseline)".into();
    }
    set.results
        .verdicts
        .iter()
        .find(|v| v.key == c.key)
        .and_then(|v| v.metric(Metric::RequestsPerS))
        .map_or_else(
            || "–".into(),
            |v| {
                let mde = v
                    .mde_pct
                    .map_or_else(String::new, |m| format!(" (MDE {m:.0} %)"));
                match v.verdict {
                    Verdict::NoChange => format!("{} indistinguishable here{mde}", v.brief()),
                    _ => v.brief(),
                }
            },
        )
}

/// What the run could tell apart: the calibration's MDE per metric for the headline's loop,
/// and which services could not be told from the baseline.
fn sensitivity(o: &mut String, set: &ResultSet, cells: &[&CellSummary], baseline: &str) {
    let res = &set.results;
    let same_as_base: Vec<&str> = first_seen(cells.iter().map(|c| &c.service))
        .into_iter()
        .filter(|s| s != baseline)
        .filter(|s| {
            let mine: Vec<&CellSummary> =
                cells.iter().copied().filter(|c| &c.service == s).collect();
            peak(&mine).is_some_and(|p| {
                res.verdicts.iter().any(|v| {
                    v.key == p.key
                        && v.metric(Metric::RequestsPerS)
                            .is_some_and(|m| m.verdict == Verdict::NoChange)
                })
            })
        })
        .map(|s| {
            cells
                .iter()
                .find(|c| c.service == s)
                .map_or("", |c| c.service.as_str())
        })
        .collect();
    let _ = write!(
        o,
        "Ratios are service / `{baseline}` at the same level, with the 95 % interval paired on rounds; ≈ = indistinguishable here (interval includes 1× or the change is under {NOISE_PCT} %)."
    );
    if !same_as_base.is_empty() {
        let _ = write!(
            o,
            " On this machine, at these settings, {} cannot be told apart from `{baseline}` in req/s.",
            same_as_base
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(o);
    match res
        .calibration
        .as_ref()
        .and_then(|k| k.cells.iter().find(|c| !c.open_loop).or(k.cells.first()))
    {
        Some(c) => {
            let mdes: Vec<String> = [
                Metric::RequestsPerS,
                Metric::CpuUsPerRequest,
                Metric::LatencyP99Us,
                Metric::StartupUs,
                Metric::IdleRssBytes,
            ]
            .iter()
            .filter_map(|&m| Some(format!("{} {:.0} %", m.label(), c.metric(m)?.mde_pct?)))
            .collect();
            let _ = writeln!(
                o,
                "\nWhat this machine can tell apart (calibration: `{}` against itself, A B A B, {} rounds at {}/{}/{}): the minimum detectable effect (95 % confidence, 80 % power) within this run is {}. Smaller differences may be real but are not shown by this run.\n",
                res.calibration.as_ref().map_or("", |k| k.service.as_str()),
                c.pairs,
                c.scenario,
                c.level,
                c.profile,
                mdes.join(", ")
            );
        }
        None => {
            let _ = writeln!(
                o,
                "\nThis run had no calibration, so the smallest difference it could detect is unknown (add `[calibration]` to the matrix file).\n"
            );
        }
    }
}

/// What was run, on what, and how to read the marks.
fn intro(
    set: &ResultSet,
    cells: &[&CellSummary],
    scenario: &str,
    profile: &str,
    readme_dir: &Path,
) -> anyhow::Result<String> {
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
    let all_cells = if results_md.is_file() {
        format!(
            " All cells: [results.md]({}).",
            link(readme_dir, &results_md)?
        )
    } else {
        String::new()
    };
    Ok(format!(
        "Run `{}` on {machine}; scenario `{scenario}`, profile `{profile}`, {reps} repetitions per cell. \
Peak = the load level with the highest mean req/s; ± = half-width of the 95 % Student-t CI; \
† generator saturated (a lower bound), ⚠ suspect.{all_cells}\n\n",
        set.results.run_id,
    ))
}

/// The measured cell with the highest mean req/s.
fn peak<'a>(mine: &[&'a CellSummary]) -> Option<&'a CellSummary> {
    let measured = |c: &&&CellSummary| {
        c.n > 0
            && matches!(
                c.status,
                None | Some(CellStatus::Ok) | Some(CellStatus::Partial)
            )
            && c.requests_per_s.is_some()
    };
    let mean = |c: &CellSummary| c.requests_per_s.as_ref().map_or(0.0, |r| r.mean);
    mine.iter()
        .filter(measured)
        .max_by(|a, b| mean(a).total_cmp(&mean(b)))
        .copied()
}

/// One service's row after its name: peak req/s (± CI, marks), level, p99 and CPU/request at
/// the peak, then start-up and memory over all its cells.
fn row(mine: &[&CellSummary], all: &[&CellSummary]) -> Vec<String> {
    let dash = || "–".to_string();
    let median_of = |f: fn(&CellSummary) -> Option<f64>| {
        stats::median(&mine.iter().filter_map(|c| f(c)).collect::<Vec<_>>())
    };
    let startup = median_of(|c| c.startup_us.as_ref().map(|s| s.median));
    let idle = median_of(|c| c.idle_rss_bytes.as_ref().map(|s| s.median));
    let peak_rss = mine.iter().filter_map(|c| c.rss_peak_bytes).max();
    let mut cols = match peak(mine) {
        Some(c) => vec![
            c.requests_per_s
                .as_ref()
                .map_or_else(dash, |r| peak_rate(c, r)),
            c.level.clone(),
            c.latency
                .as_ref()
                .map_or_else(dash, |l| micros_brief(l.p99_us as f64)),
            c.server_cpu_us_per_request
                .as_ref()
                .map_or_else(dash, |s| format!("{:.1} µs{}", s.mean, ceiling(c, all))),
        ],
        None => vec![
            mine.iter()
                .find_map(|c| c.failure.clone())
                .map_or_else(|| "no data".into(), |f| format!("✗ {f}")),
            dash(),
            dash(),
            dash(),
        ],
    };
    cols.extend([
        startup.map_or_else(dash, micros_brief),
        idle.map_or_else(dash, mib_cell),
        peak_rss.map_or_else(dash, |b| mib_cell(b as f64)),
    ]);
    cols
}

/// " (1.12× epoll)" at the same level, when the run has the no-runtime ceiling.
fn ceiling(c: &CellSummary, all: &[&CellSummary]) -> String {
    let cpu = |c: &CellSummary| c.server_cpu_us_per_request.as_ref().map(|s| s.mean);
    let base = all
        .iter()
        .find(|x| x.service == CEILING && x.level == c.level)
        .and_then(|x| cpu(x));
    match (cpu(c), base) {
        (Some(m), Some(b)) if b > 0.0 && c.service != CEILING => format!(" ({:.2}× epoll)", m / b),
        _ => String::new(),
    }
}

/// "142.3k ± 10.0 % † ⚠".
fn peak_rate(c: &CellSummary, r: &Stat) -> String {
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
}

/// The throughput chart and the latency spectrum of the headline group, when drawn.
fn plot_links(
    o: &mut String,
    set: &ResultSet,
    charts: &[Chart],
    (scenario, profile): (&str, &str),
    readme_dir: &Path,
) -> anyhow::Result<()> {
    let pick = |kind: Kind| {
        charts.iter().find(|c| {
            c.kind == kind && c.scenario.as_deref() == Some(scenario) && c.profile == profile
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::{CountedSummary, PerRequestSummary};

    fn cell(service: &str, level: &str, syscalls: Option<f64>, ins: Option<f64>) -> CellSummary {
        let stat = |v: f64| Stat {
            n: 3,
            median: v,
            mean: v,
            cv: Some(0.001),
            ..Default::default()
        };
        CellSummary {
            service: service.into(),
            level: level.into(),
            counted: Some(CountedSummary {
                reps: 3,
                server: PerRequestSummary {
                    syscalls: syscalls.map(stat),
                    syscalls_unmeasured: syscalls.is_none().then(|| "perf refused".into()),
                    ..Default::default()
                },
                instructions: ins.map(stat),
                instructions_unmeasured: (ins.is_none() && level == "c1")
                    .then(|| "io_uring".into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn the_counted_table_lists_every_counted_level_and_nothing_for_an_uncounted_run() {
        let cells = [
            cell("a", "c1", Some(3.0), Some(2378.0)),
            cell("a", "c64", Some(2.036), None),
            cell("b", "c1", None, None),
        ];
        let refs: Vec<&CellSummary> = cells.iter().collect();
        let mut o = String::new();
        counted(&mut o, &refs);
        assert!(
            o.contains(
                "| service | syscalls at c1 | syscalls at c64 | user-space instructions (c1) |"
            ),
            "{o}"
        );
        assert!(
            o.contains("| a | 3.000 ±0.1 % | 2.036 ±0.1 % | 2,378 ±0.1 % |"),
            "{o}"
        );
        assert!(o.contains("| b | unmeasured | – | unmeasured |"), "{o}");
        let plain = [CellSummary::default()];
        let mut o = String::new();
        counted(&mut o, &plain.iter().collect::<Vec<_>>());
        assert!(
            o.is_empty(),
            "a run without counts keeps its README section as it was"
        );
    }
}
