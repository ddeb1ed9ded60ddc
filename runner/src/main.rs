//! `matrix`: runs every service × scenario × load level × resource profile and leaves a
//! result set that explains itself. Table of contents: parse → plan → run → export.

use std::process::ExitCode;

use clap::Parser;
use runner::cli::{Cli, Command};
use runner::{binaries, config, plan, run};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Plan(sel) => show_plan(sel),
        Command::Run(args) if args.dry_run => show_plan(&args.select),
        Command::Run(args) => run::run(args).map(|o| match o {
            run::Outcome::AllOk => ExitCode::SUCCESS,
            run::Outcome::SomeFailed => ExitCode::from(1),
            run::Outcome::Interrupted => ExitCode::from(130),
        }),
        Command::Compare(args) => runner::compare::cmd(args),
        Command::Report(args) => runner::report::cmd(args),
    };
    result.unwrap_or_else(|e| {
        eprintln!("matrix: {e:#}");
        ExitCode::from(2)
    })
}

/// parse → plan → print.
fn show_plan(sel: &runner::cli::SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let p = plan::expand(
        &m,
        &plan::Options {
            quick: sel.quick,
            only: sel.only.clone(),
        },
    )?;
    print!("{}", plan::render(&p));
    Ok(ExitCode::SUCCESS)
}
