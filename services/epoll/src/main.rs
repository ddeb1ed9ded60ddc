//! `ping-epoll`: the ping contract (services/README.md) with no async runtime at all.
//!
//! The per-core ceiling the runtimes are measured against: one OS thread per worker, each pinned
//! to one allowed CPU, each with its own edge-triggered epoll instance and its own SO_REUSEPORT
//! listener on the same address (the kernel spreads connections, nothing is stolen). HTTP is a
//! hand-written httparse loop (ping-common's `http1`) writing ping-common's canonical bytes; the event loop,
//! connections and `/sleep` timers are in `worker.rs`, the raw syscalls in `sys.rs`.

mod sys;
mod worker;

use std::net::SocketAddr;
use std::process::ExitCode;

use ping_common::cli::Args;
use ping_common::per_core;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-epoll";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let placement = per_core::Placement::for_workers(workers);
    // SO_REUSEPORT would let us share a port a stale server still holds: probe it first.
    let listen: SocketAddr = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let started = per_core::start_threads("epoll", workers, &placement, move |cpu, ready| {
        worker::run(listen, cpu, ready)
    })
    .map_err(anyhow::Error::msg)?;

    StartupLine {
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        ..StartupLine::new(
            SERVICE,
            // No runtime: the event loop is ours, over libc's epoll bindings.
            ("libc", env!("PING_LIBC_VERSION")),
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
