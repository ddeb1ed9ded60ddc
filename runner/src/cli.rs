//! Command line (clap derive). Adding a subcommand (`compare`, `report`) = one enum variant
//! plus one match arm in main.rs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "matrix",
    version,
    about = "Run the pingmatrix benchmark matrix and explain every number"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every service × scenario × load level × profile and write a result set.
    Run(RunArgs),
    /// Print the expanded cells and the time estimate without running anything.
    Plan(SelectArgs),
    /// Compare two result sets cell by cell: ratio, 95 % CI of the change, verdict.
    Compare(crate::compare::CompareArgs),
    /// Write SVG plots and results.md for a run (optionally the README reference section).
    Report(crate::report::ReportArgs),
}

/// Which matrix file and which part of it.
#[derive(Debug, Clone, Args)]
pub struct SelectArgs {
    /// The matrix file.
    #[arg(long, default_value = "matrix.toml")]
    pub config: PathBuf,
    /// Run the [quick] subset (short windows, a few representative cells).
    #[arg(long)]
    pub quick: bool,
    /// Filter cells: service=a,b  scenario=x  profile=p  level=c64, or a bare name matching
    /// any of them. Repeatable; different dimensions combine with AND.
    #[arg(long, value_name = "FILTER")]
    pub only: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Parent directory of the run directory (results/<run-id>/).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Continue an interrupted run: skip cells whose result files are complete.
    #[arg(long, value_name = "RUN_DIR")]
    pub resume: Option<PathBuf>,
    /// Validate and print the plan, run nothing (same as `matrix plan`).
    #[arg(long)]
    pub dry_run: bool,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
}
