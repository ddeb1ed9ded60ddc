//! `ping-monoio`: the ping contract (services/README.md) on monoio, thread-per-core.
//!
//! Idiomatic shape (as monoio's own benchmark server): one OS thread per worker, each pinned to
//! one allowed CPU, each with its own runtime and its own SO_REUSEPORT listener on the same
//! address; the kernel spreads connections, nothing is stolen. The driver is `FusionDriver`
//! (io_uring, silently falling back to epoll), so the driver each worker really got is reported.
//! HTTP is a hand-written httparse loop (`conn.rs`).

mod conn;
mod worker;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::mpsc;

use ping_common::cli::Args;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-monoio";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let allowed = ping_common::cpus::allowed_cpus();
    let listen: SocketAddr = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    // Pin worker i to the i-th allowed CPU; with more workers than CPUs pinning would stack
    // threads on the same CPUs, so leave placement to the kernel then.
    let pin = workers <= allowed.len();

    let (ready_tx, ready_rx) = mpsc::channel();
    let mut threads = Vec::with_capacity(workers);
    for i in 0..workers {
        let cpu = if pin { allowed.get(i).copied() } else { None };
        let ready = ready_tx.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("monoio-{i}"))
                .spawn(move || worker::run(listen, cpu, ready))?,
        );
    }
    drop(ready_tx);

    let mut drivers = Vec::with_capacity(workers);
    for _ in 0..workers {
        match ready_rx.recv() {
            Ok(Ok(driver)) => drivers.push(driver),
            Ok(Err(e)) => anyhow::bail!("worker failed to start: {e}"),
            Err(_) => anyhow::bail!("a worker exited during start-up"),
        }
    }
    let io_uring_fds = count_io_uring_fds();
    StartupLine {
        service: SERVICE.into(),
        runtime: "monoio".into(),
        runtime_version: env!("PING_MONOIO_VERSION").into(),
        http: format!(
            "httparse {} (hand-written loop)",
            env!("PING_HTTPARSE_VERSION")
        ),
        model: Model::ThreadPerCore,
        workers,
        io_driver: io_driver(&drivers, io_uring_fds),
        pid: std::process::id(),
        listen,
        server_header: SERVICE.into(),
        pinned: pin,
        allowed_cpus: allowed,
        deviations: Vec::new(),
        burn_ns: ping_common::burn::per_request_ns(),
        io_uring_fds,
    }
    .print()?;

    for t in threads {
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

/// `anon_inode:[io_uring]` fds of this process: an io_uring runtime holds one per worker.
fn count_io_uring_fds() -> Option<usize> {
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        dir.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.as_os_str() == "anon_inode:[io_uring]")
            .count(),
    )
}
