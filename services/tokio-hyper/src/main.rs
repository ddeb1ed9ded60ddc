//! `ping-tokio-hyper`: the ping contract (services/README.md) on tokio + hyper 1.x.
//!
//! Idiomatic shape: one multi-thread runtime, one listener, one task per connection served by
//! hyper's `http1::Builder`. The builder, handler and connection I/O are ping-hyper-stack's,
//! shared with ping-tokio-per-core and ping-axum.

use std::process::ExitCode;

use anyhow::Context;
use hyper::service::service_fn;
use ping_common::cli::Args;
use ping_common::listen::Share;
use ping_common::startup::{Model, StartupLine};
use ping_hyper_stack as hyper_stack;

const SERVICE: &str = "ping-tokio-hyper";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, |args| {
        let workers = args.workers();
        // Multi-thread (work-stealing) on purpose: it is what `#[tokio::main]` gives and what
        // most tokio users run, so it is the "model" we advertise for tokio. The per-core
        // current_thread + SO_REUSEPORT variant (TechEmpower's hyper entry) would be another
        // service.
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
            format!("hyper {} (http1::Builder)", env!("PING_HYPER_VERSION")),
            Model::WorkStealing,
            workers,
            listen,
        )
    }
    .print()
    .context("cannot write the start-up line")?;

    let service = || service_fn(|req| hyper_stack::handler::handle(SERVICE, req));
    match hyper_stack::serve(listener, &protocol, service).await {}
}
