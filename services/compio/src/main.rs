//! `ping-compio`: the ping contract (services/README.md) on compio, thread-per-core.
//!
//! Idiomatic compio shape: one OS thread per worker, each with its own compio `Runtime`
//! (pinned to one allowed CPU with compio's own `thread_affinity`) and its own listener, a
//! socket2 socket with SO_REUSEPORT handed to `TcpListener::from_std` (compio's `bind` does
//! not set it); the kernel spreads connections, nothing is stolen. Built with the `io-uring`
//! driver only, so the driver is io_uring or the runtime fails to start; the driver each
//! runtime reports is checked anyway, and the ring fds are counted. HTTP is ping-epoll's
//! httparse request loop (ping-common's `http1`, shared, not copied) driven by `conn.rs`, over
//! TLS (`tls.rs`: compio-tls' rustls stream) for `--protocol http/1.1+tls`.

mod conn;
mod tls;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use compio::driver::op::OpCodeFlag;
use compio::driver::{DriverType, ProactorBuilder};
use compio::net::TcpListener;
use ping_common::cli::Args;
use ping_common::per_core;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-compio";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let placement = per_core::Placement::for_workers(workers);
    // http/1.1+tls: one configuration for every worker, loaded before anything binds (a
    // certificate or key that does not load is a bad argument).
    let tls = args.tls().map(|(cert, key)| {
        let config = ping_tls::server_config(&args.protocol, cert, key)
            .unwrap_or_else(|e| ping_common::cli::refuse(e));
        tls::Acceptor::new(config)
    });
    // SO_REUSEPORT would let us share a port a stale server still holds: probe it first.
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let started = per_core::start_threads("compio", workers, &placement, move |cpu, ready| {
        worker(listen, tls.clone(), cpu, ready)
    })
    .map_err(anyhow::Error::msg)?;
    let uring = started
        .reports
        .iter()
        .filter(|d| matches!(d, DriverType::IoUring))
        .count();
    let io_uring_fds = per_core::io_uring_fds();
    let confirmed = io_uring_fds.is_none_or(|n| n >= uring);
    let io_driver = match (uring, confirmed) {
        (0, _) => "epoll".to_owned(),
        (n, true) if n == workers => "io_uring".to_owned(),
        _ => format!(
            "mixed(io_uring={uring},other={},io_uring_fds={io_uring_fds:?})",
            workers - uring
        ),
    };
    StartupLine {
        io_driver,
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        io_uring_fds,
        ..StartupLine::new(
            SERVICE,
            ("compio", env!("PING_COMPIO_VERSION")),
            ping_common::startup::hand_written_http(env!("PING_HTTPARSE_VERSION")),
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

/// One worker thread: build a runtime, bind, report its driver, accept forever (with `tls`,
/// serving each connection after its TLS handshake; a failed one drops it).
fn worker(
    listen: SocketAddr,
    tls: Option<tls::Acceptor>,
    cpu: Option<usize>,
    ready: per_core::Ready<DriverType>,
) {
    let mut builder = compio::runtime::RuntimeBuilder::new();
    // The ops the service submits, probed now: compio probes the kernel with a throw-away
    // ring on first use, and a ring that appears after the start-up line would make its
    // `io_uring_fds` wrong (and an unsupported op fails here, not as a silent fallback).
    let mut proactor = ProactorBuilder::new();
    proactor.detect_opcode_support(
        OpCodeFlag::Accept
            | OpCodeFlag::Recv
            | OpCodeFlag::Send
            | OpCodeFlag::Shutdown
            | OpCodeFlag::Close
            | OpCodeFlag::AsyncCancel,
    );
    builder.with_proactor(proactor);
    if let Some(cpu) = cpu {
        builder.thread_affinity(HashSet::from([cpu]));
    }
    let rt = match builder.build() {
        Ok(rt) => rt,
        Err(e) => {
            ready.failed(format!("cannot build the compio runtime: {e}"));
            return;
        }
    };
    let driver = rt.driver_type();
    rt.block_on(async move {
        let listener = match reuseport_listener(listen) {
            Ok(l) => l,
            Err(e) => {
                ready.failed(format!("cannot listen on {listen}: {e}"));
                return;
            }
        };
        // Waits until the start-up line is out (ping_common::per_core).
        ready.serving(driver);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    match &tls {
                        Some(tls) => {
                            let tls = tls.clone();
                            compio::runtime::spawn(async move {
                                if let Some(stream) = tls.accept(stream).await {
                                    conn::serve(stream).await;
                                }
                            })
                            .detach();
                        }
                        None => compio::runtime::spawn(conn::serve(stream)).detach(),
                    }
                }
                // Out of fds or a connection reset while queued: back off instead of spinning.
                Err(_) => compio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    });
}

fn reuseport_listener(addr: SocketAddr) -> std::io::Result<TcpListener> {
    // The contract's listening socket (ping-common), one per worker with SO_REUSEPORT.
    TcpListener::from_std(ping_common::listen::bind_listener(
        addr,
        ping_common::listen::Share::PerCore,
    )?)
}
