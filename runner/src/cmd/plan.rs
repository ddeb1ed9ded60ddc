//! `matrix plan` (and `matrix run --dry-run`): parse → plan → print.

use std::process::ExitCode;

use crate::cli::SelectArgs;
use crate::{binaries, config, plan};

pub fn cmd(sel: &SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let p = plan::expand(&m, &sel.plan_options())?;
    print!("{}", plan::render(&p));
    Ok(ExitCode::SUCCESS)
}
