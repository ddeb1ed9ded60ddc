//! `matrix`: runs every service × scenario × load level × resource profile and leaves a
//! result set that explains itself. Table of contents: parse the command line, hand it to its
//! subcommand in `cmd/`, map errors to exit status 2 (bad input) or 74 (a file could not be
//! written).

use std::process::ExitCode;

use clap::Parser;
use runner::cli::{Cli, Command};
use runner::cmd;
use runner::results::store::WriteFailed;
use runner::results::untrusted::visible;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Plan(sel) => cmd::plan::cmd(sel),
        Command::Run(args) if args.dry_run => cmd::plan::cmd(&args.select),
        Command::Run(args) => cmd::run::cmd(args),
        Command::Calibrate(args) if args.dry_run => cmd::plan::calibration(&args.select),
        Command::Calibrate(args) => cmd::run::calibrate(args),
        Command::Compare(args) => cmd::compare::cmd(args),
        Command::Report(args) => cmd::report::cmd(args),
        Command::Site(args) => cmd::site::cmd(args),
        Command::Variants(c) => cmd::variants::cmd(c),
        Command::Which(args) => cmd::which::cmd(args),
        Command::Agent => runner::agent::main(),
        Command::Guard { runner, marker } => Ok(runner::process::guard::main(*runner, marker)),
        Command::K8s(runner::cli::K8sCommand::Render(args)) => cmd::k8s::render(args),
        Command::Ingest(args) => cmd::k8s::ingest(args),
    };
    // The TLS test certificate the command may have made (services serving TLS) goes with it.
    runner::service::tls::remove();
    result.unwrap_or_else(|e| {
        // Errors quote what they read (a result set's names and values): printed visibly.
        eprintln!("matrix: {}", visible(&format!("{e:#}")));
        if e.chain().any(|c| c.is::<WriteFailed>()) {
            ExitCode::from(74)
        } else if runner::interrupt::requested()
            || e.chain().any(|c| c.is::<runner::variant::Interrupted>())
        {
            // Stopped (Ctrl-C, SIGTERM) before the run began, e.g. while variants built: as
            // an interrupted run exits, not as bad input.
            ExitCode::from(130)
        } else {
            ExitCode::from(2)
        }
    })
}
