//! `ping-tokio-per-core`: the ping contract (services/README.md) on tokio, thread-per-core.
//!
//! The scheduler model changes, the HTTP library does not: one OS thread per worker, pinned to
//! one allowed CPU, each with its own `current_thread` runtime and its own SO_REUSEPORT listener
//! on the same address (the kernel spreads connections, nothing is stolen; TechEmpower's hyper
//! entry runs this way). Each connection is served by exactly ping-tokio-hyper's hyper stack
//! and handler (the ping-hyper-stack crate).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

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
    // SO_REUSEPORT would let us share a port a stale server still holds: probe it first.
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let started = per_core::start_threads("tokio-core", workers, &placement, move |cpu, ready| {
        worker(listen, cpu, ready)
    })
    .map_err(anyhow::Error::msg)?;

    StartupLine {
        service: SERVICE.into(),
        runtime: "tokio".into(),
        runtime_version: env!("PING_TOKIO_VERSION").into(),
        http: format!("hyper {} (http1::Builder)", env!("PING_HYPER_VERSION")),
        model: Model::ThreadPerCore,
        workers,
        io_driver: "epoll".into(),
        pid: std::process::id(),
        listen,
        server_header: SERVICE.into(),
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        deviations: hyper_stack::deviations(),
        burn_ns: ping_common::burn::per_request_ns(),
        io_uring_fds: None,
    }
    .print()?;

    for t in started.handles {
        let _ = t.join();
    }
    anyhow::bail!("all workers exited")
}

/// One worker thread: pin, build a current_thread runtime, bind, serve forever.
fn worker(listen: SocketAddr, cpu: Option<usize>, ready: per_core::Ready<()>) {
    if let Some(cpu) = cpu
        && let Err(e) = per_core::pin_current_thread(cpu)
    {
        let _ = ready.send(Err(e));
        return;
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(format!("cannot build the tokio runtime: {e}")));
            return;
        }
    };
    rt.block_on(async move {
        let listener = match reuseport_listener(listen) {
            Ok(l) => l,
            Err(e) => {
                let _ = ready.send(Err(format!("cannot listen on {listen}: {e}")));
                return;
            }
        };
        let _ = ready.send(Ok(()));
        drop(ready);
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
            // A task on this thread's runtime: with current_thread it never leaves this core.
            tokio::spawn(async move {
                let _ = http
                    .serve_connection(
                        hyper_stack::CloseAwareIo::new(stream),
                        service_fn(|req| hyper_stack::handler::handle(SERVICE, req)),
                    )
                    .await;
            });
        }
    });
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    // The contract's listening socket (ping-common), one per worker with SO_REUSEPORT.
    let l = ping_common::listen::bind_listener(addr, ping_common::listen::Share::PerCore)?;
    l.set_nonblocking(true)?;
    tokio::net::TcpListener::from_std(l)
}
