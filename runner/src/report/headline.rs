//! The README's reference section: one table per service for the headline scenario and
//! profile, generated from results.json (never hand-typed), plus links to two plots. Where
//! the run counted, the table ranks by counted cost (`counted_rank`) with the times beside
//! it, and says which metric told the services apart and which could not.

use std::fmt::Write as _;
use std::path::Path;

use crate::results::counted_rank::{Cost, rank};
use crate::results::difference::{NOISE_PCT, Verdict};
use crate::results::group::{CEILING, ceiling_multiple, first_seen};
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
    // The reader's summary first, the same lines results.md opens with.
    let answers = crate::results::answers::of(&set.results, set.cells.values());
    if !answers.is_empty() {
        o.push_str("What this run answers:\n\n");
        for a in &answers {
            o.push_str(&a.line());
            o.push('\n');
        }
        o.push('\n');
    }
    let judged = set
        .results
        .baseline
        .as_deref()
        .filter(|_| !set.results.verdicts.is_empty());
    if cells.iter().any(|c| c.counted.is_some()) {
        ranked(&mut o, set, &cells, (&scenario, &profile), judged);
    } else {
        timed(&mut o, set, &cells, judged);
    }
    by_protocol(&mut o, set, &scenario, &profile);
    plot_links(&mut o, set, charts, (&scenario, &profile), readme_dir)?;
    Ok(o)
}

/// One column per protocol where the run counted: each service's instructions per request
/// (syscalls where instructions were not counted) at the first level of the headline scenario
/// and of the first scenario of each other protocol, with its multiple of the service's own
/// cleartext HTTP/1.1 figure — what h2 or TLS costs on that runtime — and, over TLS, the
/// connection set-up (TCP and handshake, median of the repetitions' medians). "n/a" where the
/// service does not serve the protocol. Every level's counts and times are in results.md.
fn by_protocol(o: &mut String, set: &ResultSet, headline: &str, profile: &str) {
    let Some(run) = &set.run else {
        return;
    };
    let first_level = |scenario: &str| {
        run.plan
            .iter()
            .find(|c| c.scenario == scenario && c.profile == profile)
            .map(|c| (c.protocol, c.scenario.clone(), c.level.clone()))
    };
    let mut columns = Vec::new();
    columns.extend(first_level(headline));
    for c in &run.plan {
        if c.profile == profile
            && !c.protocol.is_http11()
            && !columns.iter().any(|(p, _, _)| *p == c.protocol)
        {
            columns.extend(first_level(&c.scenario));
        }
    }
    let cell = |service: &str, (_, scenario, level): &(loadgen::Protocol, String, String)| {
        set.results.cells.iter().find(|c| {
            c.service == service
                && &c.scenario == scenario
                && &c.level == level
                && c.profile == profile
        })
    };
    let per_request = |c: &CellSummary| {
        let k = c.counted.as_ref()?;
        k.instructions
            .as_ref()
            .map(|s| (s.median, "instructions"))
            .or_else(|| k.server.syscalls.as_ref().map(|s| (s.median, "syscalls")))
    };
    let counted = columns.len() > 1
        && set
            .results
            .cells
            .iter()
            .any(|c| c.scenario != headline && c.counted.is_some());
    if !counted {
        return;
    }
    let tls = columns.iter().any(|(p, _, _)| p.tls());
    let _ = write!(
        o,
        "Per request by protocol (profile `{profile}`; counted instructions, × the service's own \
         HTTP/1.1 figure):\n\n| service |"
    );
    for (p, scenario, level) in &columns {
        let _ = write!(o, " {} (`{scenario}` {level}) |", p.name());
    }
    if tls {
        let _ = write!(o, " TLS set-up (p50, first TLS column served) |");
    }
    let _ = writeln!(
        o,
        "\n|---|{}{}",
        "---:|".repeat(columns.len()),
        if tls { "---:|" } else { "" }
    );
    let services = first_seen(
        set.results
            .cells
            .iter()
            .filter(|c| c.scenario == headline && c.profile == profile)
            .map(|c| &c.service),
    );
    for s in services {
        let base = cell(&s, &columns[0]).and_then(per_request);
        let mut cols = Vec::new();
        let mut setup = None;
        for col in &columns {
            let na = run
                .not_applicable
                .iter()
                .find(|n| n.service == s && n.scenario == col.1);
            let c = cell(&s, col);
            if col.0.tls() && setup.is_none() {
                setup = c.and_then(|c| c.connection_setup_p50_us.as_ref());
            }
            cols.push(match (na, c.and_then(per_request)) {
                (Some(na), _) => na.words(),
                (None, None) => "–".into(),
                (None, Some((v, unit))) => {
                    let times = match base {
                        Some((b, bunit)) if b > 0.0 && bunit == unit && col != &columns[0] => {
                            format!(" ({:.1}×)", v / b)
                        }
                        _ => String::new(),
                    };
                    let unit = if unit == "syscalls" { " syscalls" } else { "" };
                    format!("{}{unit}{times}", crate::results::units::count(v))
                }
            });
        }
        if tls {
            cols.push(setup.map_or_else(|| "–".into(), |s| micros_brief(s.median)));
        }
        let _ = writeln!(o, "| {s} | {} |", cols.join(" | "));
    }
    let _ = writeln!(
        o,
        "\nEach protocol at every level (syscalls, kernel events, req/s, latency): the run's results.md.\n"
    );
}

/// A run without counts: services in the run's order, their times, and each one's req/s
/// against the baseline.
fn timed(o: &mut String, set: &ResultSet, cells: &[&CellSummary], judged: Option<&str>) {
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
        let mut cols = row(&mine, cells, false);
        if let Some(b) = judged {
            cols.push(against(set, &mine, b));
        }
        let _ = writeln!(o, "| {s} | {} |", cols.join(" | "));
    }
    let _ = writeln!(o);
    if let Some(b) = judged {
        sensitivity(o, set, cells, b);
    }
}

/// Where the run counted: one table ranked by counted cost ([`rank`]) — instructions per
/// request at the ranking level, syscalls per request at every counted level, medians with
/// their per-repetition CV — with the timing columns beside it (each with its interval, the
/// header with the run's MDE at the peaks), then what told the services apart and what could
/// not.
fn ranked(
    o: &mut String,
    set: &ResultSet,
    cells: &[&CellSummary],
    (scenario, profile): (&str, &str),
    judged: Option<&str>,
) {
    let counted: Vec<&CellSummary> = cells
        .iter()
        .copied()
        .filter(|c| c.counted.is_some())
        .collect();
    let levels = first_seen(counted.iter().map(|c| &c.level));
    // Ranked where instructions were counted (c1), else at the first counted level.
    let at = counted
        .iter()
        .find(|c| c.counted.as_ref().is_some_and(|k| k.instructions.is_some()))
        .map_or_else(|| levels[0].clone(), |c| c.level.clone());
    let instructions = counted.iter().any(|c| {
        c.counted
            .as_ref()
            .is_some_and(|k| k.instructions.is_some() || k.instructions_unmeasured.is_some())
    });
    let services = first_seen(cells.iter().map(|c| &c.service));
    let counts = |s: &str, l: &str| {
        counted
            .iter()
            .find(|c| c.service == s && c.level == l)
            .and_then(|c| c.counted.as_ref())
    };
    let costs: Vec<Cost> = services.iter().map(|s| Cost::of(counts(s, &at))).collect();
    let mine = |s: &str| -> Vec<&CellSummary> {
        cells.iter().copied().filter(|c| c.service == s).collect()
    };
    let peak_levels: Vec<String> = services
        .iter()
        .filter_map(|s| peak(&mine(s)).map(|c| c.level.clone()))
        .collect();
    let mde = |m: Metric| {
        mde_range(set, (scenario, profile), &peak_levels, m)
            .map_or_else(String::new, |r| format!(" (MDE {r})"))
    };

    // The column says what it ranks by: a reader takes a bare "rank" for "best runtime".
    let ranked_by = if instructions {
        format!("cheapest user-space work/request ({at})")
    } else {
        format!("fewest syscalls/request ({at})")
    };
    let _ = write!(o, "| {ranked_by} | service |");
    if instructions {
        let _ = write!(o, " user-space instructions/request ({at}) |");
    }
    for l in &levels {
        let _ = write!(o, " syscalls/request ({l}) |");
    }
    let _ = write!(
        o,
        " peak req/s{} | at | p99 at peak | server CPU/request at peak{} | start-up (median) | idle RSS | peak RSS |\n|---|---|",
        mde(Metric::RequestsPerS),
        mde(Metric::CpuUsPerRequest)
    );
    for _ in 0..levels.len() + usize::from(instructions) {
        let _ = write!(o, "---:|");
    }
    let _ = writeln!(o, "---:|---|---:|---:|---:|---:|---:|");
    let ranking = rank(&costs);
    for &(i, place) in &ranking {
        let s = &services[i];
        let mut cols = vec![place.map_or_else(|| "–".into(), |p| p.label()), s.clone()];
        if instructions {
            cols.push(counts(s, &at).map_or_else(
                || "–".into(),
                |k| count_cell(k.instructions.as_ref(), k.instructions_unmeasured.as_ref()),
            ));
        }
        for l in &levels {
            cols.push(counts(s, l).map_or_else(
                || "–".into(),
                |k| {
                    count_cell(
                        k.server.syscalls.as_ref(),
                        k.server.syscalls_unmeasured.as_ref(),
                    )
                },
            ));
        }
        cols.extend(row(&mine(s), cells, true));
        let _ = writeln!(o, "| {} |", cols.join(" | "));
    }
    let not_exact = services.iter().any(|s| {
        let ins = counts(s, &at).and_then(|k| k.instructions.as_ref());
        let sys = levels
            .iter()
            .filter_map(|l| counts(s, l).and_then(|k| k.server.syscalls.as_ref()));
        ins.into_iter()
            .filter(|_| instructions)
            .chain(sys)
            .any(crate::results::counted::not_exact)
    });
    if not_exact {
        let _ = writeln!(o, "\n{}", crate::results::counted::NOT_EXACT);
    }
    let _ = write!(o, "\nRanked by counted cost at {at}: ");
    if instructions {
        let _ = write!(
            o,
            "user-space instructions per request, then syscalls per request; services whose counts overlap over their repetitions share a rank (=). Services without an instruction count (unmeasured, not 0) are ranked after them, among themselves, by syscalls."
        );
    } else {
        let _ = write!(
            o,
            "syscalls per request; services whose counts overlap over their repetitions share a rank (=)."
        );
    }
    let _ = write!(
        o,
        " Counts are medians over repetitions ± their per-repetition CV (docs/counted-cost.md); req/s and CPU/request are means ± half their 95 % interval at each service's peak, with the minimum detectable effect (MDE) of this run at that level."
    );
    let _ = writeln!(o);
    if let Some(b) = judged {
        let order: Vec<String> = ranking.iter().map(|&(i, _)| services[i].clone()).collect();
        told_apart(o, set, cells, (scenario, profile, &at), &order, b);
    }
    machine_mde(o, set);
}

/// The paragraph under the ranked table: the services req/s could not tell from the baseline
/// (with its MDE), and which services each counted metric did tell from it (with its MDE and
/// how closely the counts repeat); the services neither count told apart, if any. Services
/// are named in `order` (the rank's).
fn told_apart(
    o: &mut String,
    set: &ResultSet,
    cells: &[&CellSummary],
    (scenario, profile, at): (&str, &str, &str),
    order: &[String],
    baseline: &str,
) {
    let res = &set.results;
    let same_set = same_in_rps(set, cells, baseline);
    let same: Vec<String> = order
        .iter()
        .filter(|s| same_set.contains(s))
        .cloned()
        .collect();
    let mut sentences = Vec::new();
    if !same.is_empty() {
        let peaks: Vec<String> = same
            .iter()
            .filter_map(|s| {
                let mine: Vec<&CellSummary> =
                    cells.iter().copied().filter(|c| &c.service == s).collect();
                peak(&mine).map(|c| c.level.clone())
            })
            .collect();
        let mde = mde_range(set, (scenario, profile), &peaks, Metric::RequestsPerS)
            .map_or_else(String::new, |r| format!(" (MDE {r})"));
        sentences.push(format!(
            "On this machine, at these settings, {} cannot be told apart from `{baseline}` in req/s{mde}.",
            ticked(&same)
        ));
    }
    let verdict = |s: &str, m: Metric| {
        res.verdicts
            .iter()
            .find(|v| {
                v.service == s && v.scenario == scenario && v.level == at && v.profile == profile
            })
            .and_then(|v| v.metric(m))
    };
    let others: Vec<String> = order.iter().filter(|s| *s != baseline).cloned().collect();
    let mut clauses = Vec::new();
    let mut apart_any = vec![false; others.len()];
    for (m, words) in [
        (
            Metric::InstructionsPerRequest,
            "user-space instructions per request",
        ),
        (Metric::SyscallsPerRequest, "syscalls per request"),
    ] {
        if !others.iter().any(|s| verdict(s, m).is_some()) {
            continue;
        }
        let mut apart = Vec::new();
        for (i, s) in others.iter().enumerate() {
            if verdict(s, m).is_some_and(|v| matches!(v.verdict, Verdict::Better | Verdict::Worse))
            {
                apart_any[i] = true;
                apart.push(s.clone());
            }
        }
        let mut how = Vec::new();
        if let Some(x) = res
            .calibration
            .as_ref()
            .and_then(|k| k.cell_for(scenario, at, profile, false))
            .and_then(|c| c.metric(m)?.mde_pct)
        {
            how.push(format!("MDE {} %", pct_brief(x)));
        }
        let cv = cells
            .iter()
            .filter(|c| c.level == at)
            .filter_map(|c| {
                let k = c.counted.as_ref()?;
                match m {
                    Metric::InstructionsPerRequest => k.instructions.as_ref()?.cv,
                    _ => k.server.syscalls.as_ref()?.cv,
                }
            })
            .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
        if let Some(cv) = cv {
            how.push(format!(
                "each service's count repeats within {} % CV",
                pct_brief(cv * 100.0)
            ));
        }
        let how = if how.is_empty() {
            String::new()
        } else {
            format!(" ({})", how.join("; "))
        };
        clauses.push(if apart.is_empty() {
            format!("{words}{how} tells none of them from it")
        } else {
            format!("{words}{how} tells {} from it", ticked(&apart))
        });
    }
    if !clauses.is_empty() {
        sentences.push(format!("Counted at {at}, {}.", clauses.join("; ")));
        let neither: Vec<String> = others
            .iter()
            .zip(&apart_any)
            .filter(|(_, a)| !**a)
            .map(|(s, _)| s.clone())
            .collect();
        if !neither.is_empty() {
            sentences.push(format!(
                "Neither count tells {} from `{baseline}`.",
                ticked(&neither)
            ));
        }
    }
    if !sentences.is_empty() {
        let _ = writeln!(o, "\n{}", sentences.join(" "));
    }
}

/// "20 %" or "15–20 %": the calibration's MDE of `m` at the given levels of the headline
/// group (each level's own calibration cell, else the closed loop's first).
fn mde_range(
    set: &ResultSet,
    (scenario, profile): (&str, &str),
    levels: &[String],
    m: Metric,
) -> Option<String> {
    let k = set.results.calibration.as_ref()?;
    let mdes: Vec<f64> = levels
        .iter()
        .filter_map(|l| k.cell_for(scenario, l, profile, false)?.metric(m)?.mde_pct)
        .collect();
    let lo = pct_brief(mdes.iter().copied().reduce(f64::min)?);
    let hi = pct_brief(mdes.iter().copied().reduce(f64::max)?);
    Some(if lo == hi {
        format!("{lo} %")
    } else {
        format!("{lo}–{hi} %")
    })
}

/// A count's median ± its per-repetition CV, "unmeasured" where the run says why it has
/// none, "–" where it has neither.
fn count_cell(s: Option<&Stat>, why: Option<&String>) -> String {
    match (s, why) {
        (Some(s), _) => crate::results::counted::count_text(s),
        (None, Some(_)) => "unmeasured".into(),
        (None, None) => "–".into(),
    }
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
    let same_as_base = same_in_rps(set, cells, baseline);
    let _ = write!(
        o,
        "Ratios are service / `{baseline}` at the same level, with the 95 % interval {}; ≈ = indistinguishable here (interval includes 1× or the change is under {NOISE_PCT} %).",
        if crate::results::verdict::any_unpaired(&set.results.verdicts) {
            "paired on rounds except where marked *unpaired* (repetitions that did not run side by side)"
        } else {
            "paired on rounds"
        }
    );
    if !same_as_base.is_empty() {
        let _ = write!(
            o,
            " On this machine, at these settings, {} cannot be told apart from `{baseline}` in req/s.",
            ticked(&same_as_base)
        );
    }
    let _ = writeln!(o);
    machine_mde(o, set);
}

/// The services (not the baseline) whose req/s at their peak the run could not tell from the
/// baseline's, in the run's order.
fn same_in_rps(set: &ResultSet, cells: &[&CellSummary], baseline: &str) -> Vec<String> {
    first_seen(cells.iter().map(|c| &c.service))
        .into_iter()
        .filter(|s| s != baseline)
        .filter(|s| {
            let mine: Vec<&CellSummary> =
                cells.iter().copied().filter(|c| &c.service == s).collect();
            peak(&mine).is_some_and(|p| {
                set.results.verdicts.iter().any(|v| {
                    v.key == p.key
                        && v.metric(Metric::RequestsPerS)
                            .is_some_and(|m| m.verdict == Verdict::NoChange)
                })
            })
        })
        .collect()
}

/// "`a`, `b`, `c`".
fn ticked(services: &[String]) -> String {
    services
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A percentage as the headline prints it: whole per cent from 1 % up, two significant
/// digits below (a counted MDE is a fraction of a per cent).
fn pct_brief(x: f64) -> String {
    if x >= 1.0 || x <= 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.*}", (1.0 - x.log10().floor()) as usize)
    }
}

/// The calibration's MDE per metric for the headline's loop (counted metrics where the run
/// calibrated them), or that the run had none.
fn machine_mde(o: &mut String, set: &ResultSet) {
    let res = &set.results;
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
                Metric::InstructionsPerRequest,
                Metric::SyscallsPerRequest,
            ]
            .iter()
            .filter_map(|&m| {
                Some(format!(
                    "{} {} %",
                    m.label(),
                    pct_brief(c.metric(m)?.mde_pct?)
                ))
            })
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
/// the peak (with its ± CI when `cpu_interval`), then start-up and memory over all its cells.
fn row(mine: &[&CellSummary], all: &[&CellSummary], cpu_interval: bool) -> Vec<String> {
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
            c.server_cpu_us_per_request.as_ref().map_or_else(dash, |s| {
                let half = if cpu_interval {
                    half_ci(s)
                } else {
                    String::new()
                };
                format!("{:.1} µs{half}{}", s.mean, ceiling(c, all))
            }),
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
    all.iter()
        .find(|x| x.service == CEILING && x.level == c.level)
        .and_then(|x| ceiling_multiple(c, x))
        .map_or_else(String::new, |r| format!(" ({r:.2}× epoll)"))
}

/// "142.3k ± 10.0 % † ⚠".
fn peak_rate(c: &CellSummary, r: &Stat) -> String {
    let half = half_ci(r);
    let marks = format!(
        "{}{}",
        if c.generator_saturated { " †" } else { "" },
        if c.suspect { " ⚠" } else { "" }
    );
    format!("{}{half}{marks}", value(Unit::PerSecond, r.mean))
}

/// " ± 10.0 %": half the 95 % interval as a percentage of the mean; empty without one.
fn half_ci(r: &Stat) -> String {
    match (r.ci95_low, r.ci95_high) {
        (Some(lo), Some(hi)) if r.mean > 0.0 => {
            format!(" ± {:.1} %", (hi - lo) / 2.0 / r.mean * 100.0)
        }
        _ => String::new(),
    }
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
    use crate::results::set;

    /// The committed counted reference run (README's headline) and its headline cells.
    fn counted_run() -> ResultSet {
        set::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-12-03T09-19-08Z-18b59fe"),
        )
        .unwrap()
    }

    fn section(set: &ResultSet) -> String {
        let cells: Vec<&CellSummary> = set
            .results
            .cells
            .iter()
            .filter(|c| c.scenario == "ping" && c.profile == "pinned")
            .collect();
        let mut o = String::new();
        let judged = set.results.baseline.as_deref();
        if cells.iter().any(|c| c.counted.is_some()) {
            ranked(&mut o, set, &cells, ("ping", "pinned"), judged);
        } else {
            timed(&mut o, set, &cells, judged);
        }
        o
    }

    /// (rank, service) of each table row, in order.
    fn ranks(o: &str) -> Vec<(String, String)> {
        o.lines()
            .filter(|l| {
                l.starts_with("| ") && !l.starts_with("| cheapest") && !l.starts_with("| fewest")
            })
            .map(|l| {
                let c: Vec<&str> = l.split(" | ").collect();
                (c[0].trim_start_matches("| ").into(), c[1].into())
            })
            .collect()
    }

    #[test]
    fn a_counted_run_ranks_by_instructions_then_syscalls_with_the_times_beside() {
        let o = section(&counted_run());
        let got = ranks(&o);
        let want = [
            ("1", "ping-epoll"),
            ("2", "ping-may-minihttp"),
            ("3", "ping-tokio-per-core"),
            ("4", "ping-tokio-hyper"),
            ("5", "ping-axum"),
            ("6", "ping-actix-web"),
            ("1= (syscalls)", "ping-monoio"),
            ("1= (syscalls)", "ping-compio"),
            ("3 (syscalls)", "ping-glommio"),
        ];
        assert_eq!(
            got,
            want.map(|(r, s)| (r.to_string(), s.to_string())),
            "{o}"
        );
        assert!(
            o.contains("| cheapest user-space work/request (c1) | service | user-space instructions/request (c1) | syscalls/request (c1) | syscalls/request (c64) | peak req/s (MDE 20 %) | at |"),
            "{o}"
        );
        assert!(
            o.contains("| 1 | ping-epoll | 2,185 ±0.0 % | 3.000 ±0.0 % | 2.007 ±0.6 % | 193.8k ± 47.3 % ⚠ | c64 |"),
            "{o}"
        );
        // An unmeasured instruction count is said so, never shown as a number.
        assert!(
            o.contains("| 1= (syscalls) | ping-monoio | unmeasured | 2.000 ±0.0 % |"),
            "{o}"
        );
        assert!(
            o.contains("cannot be told apart from `ping-tokio-hyper` in req/s (MDE 20 %)."),
            "{o}"
        );
        assert!(
            o.contains("Counted at c1, user-space instructions per request (MDE 0.097 %;"),
            "{o}"
        );
        assert!(
            !o.contains("Neither count"),
            "every service differs in a count: {o}"
        );
        assert!(
            o.contains("instructions/request 0.097 %, syscalls/request 0.013 %."),
            "{o}"
        );
    }

    #[test]
    fn without_instruction_counts_the_rank_is_by_syscalls_and_without_counts_as_before() {
        let mut s = counted_run();
        for c in &mut s.results.cells {
            if let Some(k) = c.counted.as_mut() {
                k.instructions = None;
                k.instructions_unmeasured = None;
            }
        }
        let o = section(&s);
        assert!(
            o.contains("Ranked by counted cost at c1: syscalls per request;"),
            "{o}"
        );
        assert_eq!(ranks(&o)[0], ("1= (syscalls)".into(), "ping-monoio".into()));
        assert!(!o.contains("instructions/request ("), "{o}");

        for c in &mut s.results.cells {
            c.counted = None;
        }
        let o = section(&s);
        assert!(
            o.starts_with("| service | peak req/s | at | p99 at peak | server CPU/request at peak | start-up (median) | idle RSS | peak RSS | req/s vs ping-tokio-hyper at the same level |"),
            "{o}"
        );
        assert!(
            o.contains(
                "| ping-tokio-per-core | 162.9k ± 25.2 % ⚠ | c64 | 813 µs | 6.0 µs (1.19× epoll) |"
            ),
            "{o}"
        );
        assert!(!o.contains("rank") && !o.contains("Counted at"), "{o}");
    }

    #[test]
    fn small_percentages_keep_two_significant_digits() {
        assert_eq!(pct_brief(14.56), "15");
        assert_eq!(pct_brief(1.0), "1");
        assert_eq!(pct_brief(0.63), "0.63");
        assert_eq!(pct_brief(0.0966), "0.097");
        assert_eq!(pct_brief(0.01266), "0.013");
    }
}
