//! `ping-glommio`: the ping contract (services/README.md) on glommio, thread-per-core.
//!
//! Idiomatic glommio shape: one `LocalExecutor` per worker, each on its own thread placed on
//! one allowed CPU (`Placement::Fixed`), each with its own `glommio::net::TcpListener`, which
//! binds with SO_REUSEPORT itself; the kernel spreads connections, nothing is stolen. glommio
//! runs on io_uring only (no epoll fallback). HTTP is ping-epoll's httparse request loop
//! (ping-common's `http1`, shared, not copied) driven by an async connection loop (`conn.rs`).

mod conn;

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::process::ExitCode;
use std::time::Duration;

use glommio::net::TcpListener;
use glommio::{LocalExecutorBuilder, Placement};
use ping_common::cli::Args;
use ping_common::listen::Share;
use ping_common::per_core;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-glommio";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let placement = per_core::Placement::for_workers(workers);
    // glommio's listener sets SO_REUSEPORT: check the port is really free first (and resolve :0).
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    // Executor i on the i-th allowed CPU (glommio pins it: `Placement::Fixed`).
    let started = per_core::start(workers, |i, ready| {
        let executor_placement = match placement.cpu(i) {
            Some(cpu) => Placement::Fixed(cpu),
            None => Placement::Unbound,
        };
        LocalExecutorBuilder::new(executor_placement)
            .name(&format!("glommio-{i}"))
            .spawn(move || serve(listen, ready))
            .map_err(|e| format!("cannot start glommio executor {i}: {e}"))
    })
    .map_err(anyhow::Error::msg)?;
    let io_uring_fds = per_core::io_uring_fds();
    StartupLine {
        // glommio has no other driver: an executor that cannot set up its rings fails to start
        // (above). The ring fds are counted anyway, as for monoio.
        io_driver: if io_uring_fds.is_none_or(|n| n >= workers) {
            "io_uring".into()
        } else {
            format!("io_uring(io_uring_fds={io_uring_fds:?})")
        },
        pinned: placement.pin,
        allowed_cpus: placement.allowed,
        io_uring_fds,
        ..StartupLine::new(
            SERVICE,
            ("glommio", env!("PING_GLOMMIO_VERSION")),
            ping_common::startup::hand_written_http(env!("PING_HTTPARSE_VERSION")),
            Model::ThreadPerCore,
            workers,
            listen,
        )
    }
    .print()?;

    for e in started.release() {
        let _ = e.join();
    }
    anyhow::bail!("all executors exited")
}

/// One executor: bind its own listener, report, accept forever.
async fn serve(listen: SocketAddr, ready: per_core::Ready<()>) {
    // The contract's listening socket (ping-common, SO_REUSEPORT), taken by glommio. glommio's
    // own `bind` would not set SO_REUSEADDR.
    let listener = match ping_common::listen::bind_listener(listen, Share::PerCore) {
        // SAFETY: the fd is a bound, listening TCP socket we own and hand over (into_raw_fd).
        Ok(l) => unsafe { TcpListener::from_raw_fd(l.into_raw_fd()) },
        Err(e) => {
            ready.failed(format!("cannot listen on {listen}: {e}"));
            return;
        }
    };
    // Waits until the start-up line is out (ping_common::per_core).
    ready.serving(());
    loop {
        match listener.accept().await {
            Ok(stream) => {
                glommio::spawn_local(conn::serve(stream)).detach();
            }
            // Out of fds or a connection reset while queued: back off instead of spinning.
            Err(_) => glommio::timer::sleep(Duration::from_millis(5)).await,
        }
    }
}
