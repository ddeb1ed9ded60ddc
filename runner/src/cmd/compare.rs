//! `matrix compare <old> <new>`: loads two result sets, compares them, prints the comparison
//! (or writes it into a README section) and turns regressions into the exit status.
//!
//! Exit status: 0 compared; 1 `--fail-on-regression` found a regression, or the new run has
//! failed or missing cells (unless `--allow-incomplete`); 2 error or refusal, including cells
//! run differently on the two sides (unless `--force`).

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cli::{CompareArgs, Format};
use crate::compare;
use crate::readme;
use crate::results::set;

/// Load, compare, render, optionally update a README, exit status.
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
    let c = compare::compare(
        &old,
        &new,
        compare::Options {
            noise_pct: args.noise_pct,
            force: args.force,
        },
    )?;
    let out = match args.format {
        Format::Terminal => {
            let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            compare::export::terminal::render(&c, colour)
        }
        Format::Markdown => compare::export::markdown::render(&c),
        Format::Json => compare::export::json::render(&c)?,
    };
    if let Some(readme) = &args.readme {
        readme::update_file(readme, readme::COMPARE, &out)?;
        eprintln!("updated the compare section of {}", readme.display());
    } else {
        print!("{out}");
    }
    let withheld = c.withheld();
    if !withheld.is_empty() {
        for cell in &withheld {
            eprintln!(
                "refused: {} was run differently ({}); pass --force to compare it anyway",
                cell.id,
                cell.not_comparable.join("; ")
            );
        }
        return Ok(ExitCode::from(2));
    }
    if let Some(pct) = args.fail_on_regression {
        let reg = c.regressions(pct);
        for (cell, m) in &reg {
            eprintln!(
                "regression: {} {} {:+.1} %",
                cell.id,
                m.metric.label(),
                m.difference.as_ref().map_or(0.0, |d| d.change_pct)
            );
        }
        let gaps = c.gaps();
        for g in &gaps {
            let verdict = if args.allow_incomplete {
                "ignored (--allow-incomplete)"
            } else {
                "fails the gate"
            };
            eprintln!("incomplete: {g} — {verdict}");
        }
        if !reg.is_empty() || (!gaps.is_empty() && !args.allow_incomplete) {
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
