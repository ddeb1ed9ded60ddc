//! `matrix report <run>`: SVG plots under `<run>/plots/`, results.md regenerated with the
//! plots linked, and optionally the README's reference section rewritten from results.json.

pub mod bars;
pub mod charts;
pub mod data;
pub mod headline;
pub mod open_loop;
pub mod palette;
pub mod results_md;
pub mod spectrum;
pub mod style;
pub mod throughput;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::readme;
use crate::results::set;
use crate::results::store::write_atomic;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The run directory (results/<run-id>) or its results.json.
    pub run: PathBuf,
    /// Replace the text between the pingmatrix:reference markers of this file with the
    /// headline table and links to two plots.
    #[arg(long, value_name = "FILE")]
    pub readme: Option<PathBuf>,
    /// Load level for the latency spectra (e.g. c64); default: the highest level every
    /// service of a scenario reached.
    #[arg(long, value_name = "LEVEL")]
    pub latency_level: Option<String>,
}

/// Writes the plots and results.md; returns the charts written.
pub fn write(
    set: &set::ResultSet,
    latency_level: Option<&str>,
) -> anyhow::Result<Vec<charts::Chart>> {
    let charts = charts::all(set, latency_level)?;
    let dir = set.dir.join("plots");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for c in &charts {
        write_atomic(&set.dir.join(&c.file), c.svg.as_bytes())?;
    }
    write_atomic(
        &set.dir.join("results.md"),
        &results_md::render(set, &charts)?,
    )?;
    Ok(charts)
}

pub fn cmd(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    // Check the README before spending time on plots: a missing marker is the likely error.
    if let Some(readme) = &args.readme {
        let text = std::fs::read_to_string(readme)
            .with_context(|| format!("reading {}", readme.display()))?;
        readme::replace(&text, readme::REFERENCE, "")
            .map_err(|e| anyhow::anyhow!("{}: {e}", readme.display()))?;
    }
    let set = set::load(&args.run)?;
    let charts = write(&set, args.latency_level.as_deref())?;
    for c in &charts {
        println!("wrote {}", set.dir.join(&c.file).display());
    }
    println!("wrote {}", set.dir.join("results.md").display());
    if let Some(readme) = &args.readme {
        let readme_dir = readme
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let section = headline::render(&set, &charts, readme_dir)?;
        readme::update_file(readme, readme::REFERENCE, &section)?;
        println!("updated the reference section of {}", readme.display());
    }
    Ok(ExitCode::SUCCESS)
}
