//! `matrix plan` (and `matrix run --dry-run`): parse → plan → print. Beside the default
//! matrix it also estimates the complete sweep (`matrix-full.toml` next to it), so the choice
//! between them is made with both times in view.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::SelectArgs;
use crate::results::units::min_sec;
use crate::{binaries, config, plan};

/// The complete sweep's file name, looked up next to the default `matrix.toml`.
const FULL: &str = "matrix-full.toml";

pub fn cmd(sel: &SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let p = plan::expand(&m, &sel.plan_options())?;
    print!("{}", plan::render(&p));
    if let Some(line) = full_sweep_line(&sel.config, &sel.plan_options()) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `matrix calibrate --dry-run`: the calibration plan.
pub fn calibration(sel: &SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let opts = plan::Options {
        calibration: plan::Calibrate::Only,
        ..sel.plan_options()
    };
    print!("{}", plan::render(&plan::expand(&m, &opts)?));
    Ok(ExitCode::SUCCESS)
}

/// "complete sweep matrix-full.toml: 252 cells, estimated 29:01" when `config` is a
/// `matrix.toml` with the full sweep beside it (and that file plans without error).
fn full_sweep_line(config: &Path, opts: &plan::Options) -> Option<String> {
    if config.file_name()? != "matrix.toml" {
        return None;
    }
    let full = config.with_file_name(FULL);
    let m = config::load(&full, binaries::exe_dir().as_deref()).ok()?;
    let p = plan::expand(&m, opts).ok()?;
    Some(format!(
        "complete sweep {}: {} cells, estimated wall time {} (run it with --config {})",
        full.display(),
        p.cell_count(),
        min_sec(p.estimate_s()),
        full.display()
    ))
}
