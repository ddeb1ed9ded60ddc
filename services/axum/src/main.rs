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
use std::time::Duration;

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
        http: format!(
            "axum {} (Router) on hyper {} (http1::Builder)",
            env!("PING_AXUM_VERSION"),
            env!("PING_HYPER_VERSION")
        ),
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
    let app = app::router();
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
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let _ = http
                .serve_connection(hyper_stack::CloseAwareIo::new(stream), service)
                .await;
        });
    }
}
