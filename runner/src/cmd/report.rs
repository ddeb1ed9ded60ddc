//! `matrix report <run>`: SVG plots under `<run>/plots/`, results.md regenerated with the
//! plots linked, the run's page (index.html; alone with `--html`), and optionally the
//! README's reference section rewritten from results.json.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::ReportArgs;
use crate::export::json::results_file;
use crate::export::page;
use crate::readme;
use crate::report::{self, charts::Chart, plots_md::plots_section};
use crate::results::schema::CellResult;
use crate::results::set::{self, ResultSet};
use crate::results::store::{RunLock, write_atomic};
use crate::results::summary::summarize_cell;
use crate::results::{calibration, verdict};

/// results.md with the section linking every plot.
fn results_md(set: &ResultSet, charts: &[Chart]) -> anyhow::Result<Vec<u8>> {
    let run = set.run.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "{} holds no run.json: results.md needs the run record",
            set.dir.display()
        )
    })?;
    let cells: Vec<&CellResult> = set.cells.values().collect();
    let plots = plots_section(charts);
    Ok(page::results_md(run, &set.results, &cells, Some(&plots)))
}

/// Writes the plots and results.md; returns the charts written.
pub fn write(set: &ResultSet, latency_level: Option<&str>) -> anyhow::Result<Vec<Chart>> {
    let charts = report::charts::all(set, latency_level)?;
    let dir = set.dir.join("plots");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for c in &charts {
        write_atomic(&set.dir.join(&c.file), c.svg.as_bytes())?;
    }
    write_atomic(&set.dir.join("results.md"), &results_md(set, &charts)?)?;
    Ok(charts)
}

/// `--resummarize`: results.json's cells summarized again from the cell files, and the
/// calibration and the verdicts against the baseline derived again from them (they are
/// judgements of those summaries).
fn resummarize(run: &Path) -> anyhow::Result<()> {
    let set = set::load_unmatched(run)?;
    let old = &set.results;
    let cells = old
        .cells
        .iter()
        .map(|c| {
            set.cells
                .get(&c.key)
                .ok_or_else(|| anyhow::anyhow!("{}: no cell file for {}", set.dir.display(), c.key))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let summaries = cells.iter().map(|c| summarize_cell(c)).collect();
    let mut results = results_file(&old.run_id, old.status, summaries, old.drift.clone());
    results.replay_of = old.replay_of.clone();
    let arms = set.calibration_arms()?;
    results.calibration = if arms.is_empty() {
        old.calibration.clone()
    } else {
        calibration::from_cells(arms.iter().chain(cells.iter().copied()))
    };
    if let Some(baseline) = &old.baseline {
        results.verdicts =
            verdict::against_baseline(&cells, baseline, results.calibration.as_ref());
        results.baseline = Some(baseline.clone()).filter(|_| !results.verdicts.is_empty());
    }
    let path = set.dir.join("results.json");
    crate::results::store::write_results(&path, &results)?;
    println!("wrote {}", path.display());
    Ok(())
}

pub fn cmd(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    // Every mode writes into the run directory: one writer at a time.
    // (A path that is no run directory is left to the loader's error.)
    let dir = set::dir_of(&args.run);
    let _lock = dir.is_dir().then(|| RunLock::acquire(&dir)).transpose()?;
    if args.resummarize {
        resummarize(&args.run)?;
    }
    if let Some(old) = &args.diff_flamegraph {
        return super::diff_flamegraph::cmd(old, &args.run);
    }
    if args.html {
        let set = set::load(&args.run)?;
        println!("wrote {}", super::site::write_run_page(&set)?.display());
        return Ok(ExitCode::SUCCESS);
    }
    // Check the README before spending time on plots: a missing marker is the likely error.
    // Where it has a place for the list of runs (this repository's does), that is filled too.
    let mut lists_runs = false;
    if let Some(readme) = &args.readme {
        let text = std::fs::read_to_string(readme)
            .with_context(|| format!("reading {}", readme.display()))?;
        readme::replace(&text, readme::REFERENCE, "")
            .map_err(|e| anyhow::anyhow!("{}: {e}", readme.display()))?;
        lists_runs = text.contains(readme::RUNS.begin);
    }
    let set = set::load(&args.run)?;
    if args.readme.is_some()
        && let Some(why) = report::headline::refusal(&set)
    {
        // Before any file is written: the user asked for the README and gets nothing else.
        anyhow::bail!(why);
    }
    let charts = write(&set, args.latency_level.as_deref())?;
    for c in &charts {
        println!("wrote {}", set.dir.join(&c.file).display());
    }
    println!("wrote {}", set.dir.join("results.md").display());
    println!("wrote {}", super::site::write_run_page(&set)?.display());
    if let Some(readme) = &args.readme {
        let readme_dir = readme
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let section = report::headline::render(&set, &charts, readme_dir)?;
        readme::update_file(readme, readme::REFERENCE, &section)?;
        println!("updated the reference section of {}", readme.display());
        // Every committed run beside this one, each with its page.
        if lists_runs {
            let results_dir = set.dir.parent().unwrap_or(Path::new("."));
            let runs = report::runs::render(results_dir, readme_dir)?;
            readme::update_file(readme, readme::RUNS, &runs)?;
            println!("updated the list of runs of {}", readme.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
