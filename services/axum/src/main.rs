//! `ping-axum`: the ping contract (services/README.md) on axum.
//!
//! The application (`app.rs`) is plain axum. It is served by ping-tokio-hyper's runtime and
//! connection loop: a multi-thread (work-stealing) tokio runtime, one listener, one task per
//! connection, hyper's `http1::Builder` and connection I/O as ping-hyper-stack configures them
//! for every hyper-served service. `axum::serve` cannot set hyper's options (title-case header names,
//! `pipeline_flush`, head limit), and serving both through the same loop makes the difference
//! between ping-axum and ping-tokio-hyper the framework's cost alone.

mod app;

use std::process::ExitCode;

use anyhow::Context;
use hyper_util::service::TowerToHyperService;
use ping_common::cli::Args;
use ping_common::listen::Share;
use ping_common::startup::{Model, StartupLine};
use ping_hyper_stack as hyper_stack;

const SERVICE: &str = "ping-axum";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, |args| {
        let workers = args.workers();
        let rt = hyper_stack::accept::work_stealing(workers)
            .context("cannot build the tokio runtime")?;
        rt.block_on(run(args, workers))
    })
}

async fn run(args: Args, workers: usize) -> anyhow::Result<()> {
    // Before anything binds: a certificate or key that does not load is a bad argument.
    let protocol =
        hyper_stack::Protocol::from_args(&args).unwrap_or_else(|e| ping_common::cli::refuse(e));
    let listener = hyper_stack::accept::listener(args.listen, Share::Exclusive)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let listen = listener.local_addr()?;
    StartupLine {
        deviations: hyper_stack::deviations(),
        ..StartupLine::new(
            SERVICE,
            ("tokio", env!("PING_TOKIO_VERSION")),
            format!(
                "axum {} (Router) on hyper {} (http1::Builder)",
                env!("PING_AXUM_VERSION"),
                env!("PING_HYPER_VERSION")
            ),
            Model::WorkStealing,
            workers,
            listen,
        )
    }
    .print()
    .context("cannot write the start-up line")?;

    let app = app::router();
    match hyper_stack::serve(listener, &protocol, || {
        TowerToHyperService::new(app.clone())
    })
    .await {}
}
