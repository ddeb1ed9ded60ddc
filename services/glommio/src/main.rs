//! `ping-glommio`: the ping contract (services/README.md) on glommio, thread-per-core.
//!
//! Idiomatic glommio shape: one `LocalExecutor` per worker, each on its own thread placed on
//! one allowed CPU (`Placement::Fixed`), each with its own `glommio::net::TcpListener`, which
//! binds with SO_REUSEPORT itself; the kernel spreads connections, nothing is stolen. glommio
//! runs on io_uring only (no epoll fallback). HTTP is ping-epoll's httparse request loop
//! (`http.rs`, included, not copied) driven by an async connection loop (`conn.rs`).

mod conn;
#[path = "../../epoll/src/http.rs"]
mod http;

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use glommio::net::TcpListener;
use glommio::{LocalExecutorBuilder, Placement};
use ping_common::cli::Args;
use ping_common::listen::Share;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-glommio";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let allowed = ping_common::cpus::allowed_cpus();
    // glommio's listener sets SO_REUSEPORT: check the port is really free first (and resolve :0).
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    // Pin executor i to the i-th allowed CPU; with more workers than CPUs pinning would stack
    // executors on the same CPUs, so leave placement to the kernel then.
    let pin = workers <= allowed.len();

    let (ready_tx, ready_rx) = mpsc::channel();
    let mut executors = Vec::with_capacity(workers);
    for i in 0..workers {
        let placement = match allowed.get(i) {
            Some(&cpu) if pin => Placement::Fixed(cpu),
            _ => Placement::Unbound,
        };
        let ready = ready_tx.clone();
        let executor = LocalExecutorBuilder::new(placement)
            .name(&format!("glommio-{i}"))
            .spawn(move || serve(listen, ready))
            .map_err(|e| anyhow::anyhow!("cannot start glommio executor {i}: {e}"))?;
        executors.push(executor);
    }
    drop(ready_tx);
    for _ in 0..workers {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("worker failed to start: {e}"),
            Err(_) => anyhow::bail!("a worker exited during start-up"),
        }
    }
    let io_uring_fds = count_io_uring_fds();
    StartupLine {
        service: SERVICE.into(),
        runtime: "glommio".into(),
        runtime_version: env!("PING_GLOMMIO_VERSION").into(),
        http: format!(
            "httparse {} (hand-written loop)",
            env!("PING_HTTPARSE_VERSION")
        ),
        model: Model::ThreadPerCore,
        workers,
        // glommio has no other driver: an executor that cannot set up its rings fails to start
        // (above). The ring fds are counted anyway, as for monoio.
        io_driver: if io_uring_fds.is_none_or(|n| n >= workers) {
            "io_uring".into()
        } else {
            format!("io_uring(io_uring_fds={io_uring_fds:?})")
        },
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

    for e in executors {
        let _ = e.join();
    }
    anyhow::bail!("all executors exited")
}

/// One executor: bind its own listener, report, accept forever.
async fn serve(listen: SocketAddr, ready: Sender<Result<(), String>>) {
    // The contract's listening socket (ping-common, SO_REUSEPORT), taken by glommio. glommio's
    // own `bind` would not set SO_REUSEADDR.
    let listener = match ping_common::listen::bind_listener(listen, Share::PerCore) {
        // SAFETY: the fd is a bound, listening TCP socket we own and hand over (into_raw_fd).
        Ok(l) => unsafe { TcpListener::from_raw_fd(l.into_raw_fd()) },
        Err(e) => {
            let _ = ready.send(Err(format!("cannot listen on {listen}: {e}")));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    drop(ready);
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

/// `anon_inode:[io_uring]` fds of this process (glommio holds several per executor).
fn count_io_uring_fds() -> Option<usize> {
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        dir.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.as_os_str() == "anon_inode:[io_uring]")
            .count(),
    )
}
