//! `ping-monoio`: the ping contract (services/README.md) on monoio, thread-per-core.
//!
//! Idiomatic shape (as monoio's own benchmark server): one OS thread per worker, each pinned to
//! one allowed CPU, each with its own runtime and its own SO_REUSEPORT listener on the same
//! address; the kernel spreads connections, nothing is stolen. The driver is `FusionDriver`
//! (io_uring, silently falling back to epoll), so the driver each worker really got is reported.
//! HTTP is a hand-written httparse loop (`conn.rs`), over TLS (monoio-rustls, one
//! configuration from ping-tls shared by every worker) for `--protocol http/1.1+tls`.

mod conn;
mod worker;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use ping_common::cli::Args;
use ping_common::per_core;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-monoio";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let placement = per_core::Placement::for_workers(workers);
    // http/1.1+tls: loaded before anything binds (a certificate or key that does not load is
    // a bad argument).
    let tls = args.tls().map(|(cert, key)| {
        let mut config = ping_tls::server_config(&args.protocol, cert, key)
            .unwrap_or_else(|e| ping_common::cli::refuse(e));
        // monoio-rustls writes only the first record of a failed handshake: see there.
        ping_tls::refuse_unserved_alpn_early(&mut config);
        monoio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let listen: SocketAddr = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let started = per_core::start_threads("monoio", workers, &placement, move |cpu, ready| {
        worker::run(listen, tls.clone(), cpu, ready)
    })
    .map_err(anyhow::Error::msg)?;
    let drivers = &started.reports;
    let io_uring_fds = per_core::io_uring_fds();
    StartupLine {
        io_driver: io_driver(drivers, io_uring_fds),
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        io_uring_fds,
        ..StartupLine::new(
            SERVICE,
            ("monoio", env!("PING_MONOIO_VERSION")),
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

/// One driver name if every worker agrees and the fd count confirms it, else `mixed(...)`.
fn io_driver(drivers: &[worker::Driver], io_uring_fds: Option<usize>) -> String {
    let uring = drivers
        .iter()
        .filter(|d| **d == worker::Driver::IoUring)
        .count();
    let confirmed = io_uring_fds.is_none_or(|n| n >= uring);
    match (uring, confirmed) {
        (0, _) => "epoll".into(),
        (n, true) if n == drivers.len() => "io_uring".into(),
        _ => format!(
            "mixed(io_uring={uring},epoll={},io_uring_fds={io_uring_fds:?})",
            drivers.len() - uring
        ),
    }
}
