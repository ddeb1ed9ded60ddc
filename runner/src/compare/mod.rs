//! `matrix compare <old> <new>`: pairs the cells of two committed result sets and says,
//! per metric, whether the change is real (95 % Welch interval of the difference excludes
//! zero and exceeds a noise threshold) or noise — refusing when the runs are not comparable.
//!
//! Exit status: 0 compared; 1 `--fail-on-regression` found a regression; 2 error or refusal
//! (the binary's error path).

pub mod comparable;
pub mod export;
pub mod matching;
pub mod metric;
pub mod model;
pub mod welch;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use self::model::{CellComparison, Comparison, MetricComparison, Side};
use self::welch::Verdict;
use crate::results::schema::CellStatus;
use crate::results::set::{self, ResultSet};

pub const METHOD: &str = "Welch's t on the per-repetition values (per-start for startup and idle RSS): \
95 % CI of the difference of means, relative to the old mean";

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline: a run directory (results/<run-id>) or its results.json.
    pub old: PathBuf,
    /// The candidate: a run directory or its results.json.
    pub new: PathBuf,
    /// Changes smaller than this (percent) are "no change" even when significant.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_pct: f64,
    /// Compare even when hardware, load generator, load model, pinning or limits differ
    /// (the output header says so).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Exit with status 1 if any metric got significantly worse by at least PCT percent.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// Replace the text between the pingmatrix:compare markers of this file with the
    /// Markdown comparison.
    #[arg(long, value_name = "FILE")]
    pub readme: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Terminal,
    Markdown,
    Json,
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub noise_pct: f64,
    pub force: bool,
}

/// The refusal carries every reason, so the user sees all of them at once.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to compare: the runs are not comparable:\n  - {}\n(pass --force to compare anyway; the output will say so)",
    .0.join("\n  - ")
)]
pub struct NotComparable(pub Vec<String>);

pub fn compare(
    old: &ResultSet,
    new: &ResultSet,
    opt: Options,
) -> Result<Comparison, NotComparable> {
    let run_diffs = comparable::run_differences(old, new);
    if !run_diffs.is_empty() && !opt.force {
        return Err(NotComparable(run_diffs));
    }
    let (old_specs, new_specs) = (comparable::specs(old), comparable::specs(new));
    let m = matching::match_cells(&old.results.cells, &new.results.cells);
    let mut any_cell_diff = false;
    let cells = m
        .pairs
        .iter()
        .map(|(o, n)| {
            let not_comparable =
                comparable::cell_differences(old_specs.get(&o.key), new_specs.get(&n.key));
            any_cell_diff |= !not_comparable.is_empty();
            let withhold = !not_comparable.is_empty() && !opt.force;
            let metrics = metric::ALL
                .iter()
                .map(|&mt| {
                    let so = metric::sample(o, old.cells.get(&o.key), mt);
                    let sn = metric::sample(n, new.cells.get(&n.key), mt);
                    let difference = match (&so, &sn) {
                        (Some(a), Some(b)) => welch::difference(a, b),
                        _ => None,
                    };
                    let verdict = match &difference {
                        None => Verdict::Missing,
                        Some(_) if withhold => Verdict::NotComparable,
                        Some(d) => welch::verdict(mt, d, opt.noise_pct),
                    };
                    MetricComparison {
                        metric: mt,
                        unit: mt.unit(),
                        old: so,
                        new: sn,
                        difference,
                        verdict,
                    }
                })
                .collect();
            let mut suspect_reasons: Vec<String> = o
                .suspect_reasons
                .iter()
                .map(|r| format!("old: {r}"))
                .collect();
            suspect_reasons.extend(n.suspect_reasons.iter().map(|r| format!("new: {r}")));
            let failures = [("old", o), ("new", n)]
                .iter()
                .filter_map(|(side, c)| {
                    let bad = !matches!(c.status, None | Some(CellStatus::Ok));
                    (bad || c.failure.is_some()).then(|| {
                        format!(
                            "{side}: {:?}{}",
                            c.status.unwrap_or(CellStatus::Failed),
                            c.failure
                                .as_ref()
                                .map_or_else(String::new, |f| format!(" ({f})"))
                        )
                        .to_lowercase()
                    })
                })
                .collect();
            CellComparison {
                id: matching::CellId::of(n),
                key: n.key.clone(),
                suspect_old: o.suspect,
                suspect_new: n.suspect,
                suspect_reasons,
                failures,
                not_comparable,
                metrics,
            }
        })
        .collect();
    Ok(Comparison {
        old: side(old),
        new: side(new),
        method: METHOD.into(),
        noise_pct: opt.noise_pct,
        forced: opt.force && (!run_diffs.is_empty() || any_cell_diff),
        incomparable: run_diffs,
        only_old: m.only_old,
        only_new: m.only_new,
        cells,
    })
}

fn side(s: &ResultSet) -> Side {
    let env = s.run.as_ref().map(|r| &r.environment);
    Side {
        label: s.label.clone(),
        run_id: s.results.run_id.clone(),
        cpu_model: env.map(|e| e.hardware.cpu_model.clone()),
        logical_cpus: env.map(|e| e.hardware.logical_cpus),
        loadgen_version: env.and_then(|e| e.loadgen_version.clone()),
        git_commit: env.and_then(|e| e.source.git_commit.clone()),
    }
}

/// The subcommand: load, compare, render, optionally update a README, exit status.
pub fn cmd(args: &CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.noise_pct.is_finite() && args.noise_pct >= 0.0,
        "--noise-pct must be a non-negative number of percent (got {})",
        args.noise_pct
    );
    if let Some(p) = args.fail_on_regression {
        anyhow::ensure!(
            p.is_finite() && p >= 0.0,
            "--fail-on-regression must be a non-negative number of percent (got {p})"
        );
    }
    anyhow::ensure!(
        args.readme.is_none() || args.format == Format::Markdown,
        "--readme needs --format markdown (the README gets the Markdown table)"
    );
    let old = set::load(&args.old)?;
    let new = set::load(&args.new)?;
    let c = compare(
        &old,
        &new,
        Options {
            noise_pct: args.noise_pct,
            force: args.force,
        },
    )?;
    let out = match args.format {
        Format::Terminal => {
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            export::terminal::render(&c, colour)
        }
        Format::Markdown => export::markdown::render(&c),
        Format::Json => export::json::render(&c)?,
    };
    if let Some(readme) = &args.readme {
        crate::readme::update_file(readme, crate::readme::COMPARE, &out)?;
        eprintln!("updated the compare section of {}", readme.display());
    } else {
        print!("{out}");
    }
    if let Some(pct) = args.fail_on_regression {
        let reg = c.regressions(pct);
        if !reg.is_empty() {
            for (cell, m) in &reg {
                eprintln!(
                    "regression: {} {} {:+.1} %",
                    cell.id,
                    m.metric.label(),
                    m.difference.as_ref().map_or(0.0, |d| d.change_pct)
                );
            }
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
