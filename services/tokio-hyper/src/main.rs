//! `ping-tokio-hyper`: the ping contract (services/README.md) on tokio + hyper 1.x.
//!
//! Idiomatic shape: one multi-thread runtime, one listener, one task per connection served by
//! hyper's `http1::Builder`. The builder, handler and connection I/O are ping-hyper-stack's,
//! shared with ping-tokio-per-core and ping-axum.

use std::process::ExitCode;
use std::time::Duration;

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
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .context("cannot build the tokio runtime")?;
        rt.block_on(run(args, workers))
    })
}

async fn run(args: Args, workers: usize) -> anyhow::Result<()> {
    // The contract's listening socket (ping-common: backlog, SO_REUSEADDR), taken by tokio.
    let listener = ping_common::listen::bind_listener(args.listen, Share::Exclusive)
        .and_then(|l| {
            l.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(l)
        })
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let listen = listener.local_addr()?;
    StartupLine {
        service: SERVICE.into(),
        runtime: "tokio".into(),
        runtime_version: env!("PING_TOKIO_VERSION").into(),
        http: format!("hyper {} (http1::Builder)", env!("PING_HYPER_VERSION")),
        model: Model::WorkStealing,
        workers,
        io_driver: "epoll".into(),
        pid: std::process::id(),
        listen,
        server_header: SERVICE.into(),
        pinned: false,
        allowed_cpus: ping_common::cpus::allowed_cpus(),
        deviations: hyper_stack::deviations(),
        burn_ns: ping_common::burn::per_request_ns(),
        io_uring_fds: None,
    }
    .print()
    .context("cannot write the start-up line")?;

    let http = hyper_stack::builder();

    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of fds or a connection reset while queued: back off instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let http = http.clone();
        tokio::spawn(async move {
            let _ = http
                .serve_connection(
                    hyper_stack::CloseAwareIo::new(stream),
                    service_fn(|req| hyper_stack::handler::handle(SERVICE, req)),
                )
                .await;
        });
    }
}
