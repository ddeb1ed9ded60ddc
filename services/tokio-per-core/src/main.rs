//! `ping-tokio-per-core`: the ping contract (services/README.md) on tokio, thread-per-core.
//!
//! The scheduler model changes, the HTTP library does not: one OS thread per worker, pinned to
//! one allowed CPU, each with its own `current_thread` runtime and its own SO_REUSEPORT listener
//! on the same address (the kernel spreads connections, nothing is stolen; TechEmpower's hyper
//! entry runs this way). Each connection is served by exactly ping-tokio-hyper's hyper stack
//! and handler (the ping-hyper-stack crate).

use std::net::SocketAddr;
use std::process::ExitCode;

use hyper::service::service_fn;
use ping_common::cli::Args;
use ping_common::per_core;
use ping_common::startup::{Model, StartupLine};
use ping_hyper_stack as hyper_stack;

const SERVICE: &str = "ping-tokio-per-core";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let placement = per_core::Placement::for_workers(workers);
    // One TLS configuration (where the protocol is a TLS one), shared by every worker;
    // a certificate or key that does not load is a bad argument, refused before anything binds.
    let protocol =
        hyper_stack::Protocol::from_args(&args).unwrap_or_else(|e| ping_common::cli::refuse(e));
    // SO_REUSEPORT would let us share a port a stale server still holds: probe it first.
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let started = per_core::start_threads("tokio-core", workers, &placement, move |cpu, ready| {
        worker(listen, protocol.clone(), cpu, ready)
    })
    .map_err(anyhow::Error::msg)?;

    StartupLine {
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        deviations: hyper_stack::deviations(),
        ..StartupLine::new(
            SERVICE,
            ("tokio", env!("PING_TOKIO_VERSION")),
            format!("hyper {} (http1::Builder)", env!("PING_HYPER_VERSION")),
            Model::ThreadPerCore,
            workers,
            listen,
        )
    }
    .print()?;

    for t in started.release() {
        let _ = t.join();
    }
    anyhow::bail!("all workers exited")
}

/// One worker thread: pin, build a current_thread runtime, bind, serve forever.
fn worker(
    listen: SocketAddr,
    protocol: hyper_stack::Protocol,
    cpu: Option<usize>,
    ready: per_core::Ready<()>,
) {
    if let Some(cpu) = cpu
        && let Err(e) = per_core::pin_current_thread(cpu)
    {
        ready.failed(e);
        return;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            ready.failed(format!("cannot build the tokio runtime: {e}"));
            return;
        }
    };
    rt.block_on(async move {
        let listener =
            match hyper_stack::accept::listener(listen, ping_common::listen::Share::PerCore) {
                Ok(l) => l,
                Err(e) => {
                    ready.failed(format!("cannot listen on {listen}: {e}"));
                    return;
                }
            };
        ready.serving(());
        // Tasks on this thread's current_thread runtime: they never leave this core.
        let service = || service_fn(|req| hyper_stack::handler::handle(SERVICE, req));
        match hyper_stack::serve(listener, &protocol, service).await {}
    });
}
