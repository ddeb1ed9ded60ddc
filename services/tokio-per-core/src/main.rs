//! `ping-tokio-per-core`: the ping contract (services/README.md) on tokio, thread-per-core.
//!
//! The scheduler model changes, the HTTP library does not: one OS thread per worker, pinned to
//! one allowed CPU, each with its own `current_thread` runtime and its own SO_REUSEPORT listener
//! on the same address (the kernel spreads connections, nothing is stolen; TechEmpower's hyper
//! entry runs this way). Each connection is served by exactly ping-tokio-hyper's hyper stack
//! and handler (the ping-hyper-stack crate).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use hyper::service::service_fn;
use ping_common::cli::Args;
use ping_common::startup::{Model, StartupLine};
use ping_hyper_stack as hyper_stack;

const SERVICE: &str = "ping-tokio-per-core";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    let allowed = ping_common::cpus::allowed_cpus();
    // SO_REUSEPORT would let us share a port a stale server still holds: probe it first.
    let listen = ping_common::listen::probe_listen(args.listen)
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
                .name(format!("tokio-core-{i}"))
                .spawn(move || worker(listen, cpu, ready))?,
        );
    }
    drop(ready_tx);
    for _ in 0..workers {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => anyhow::bail!("worker failed to start: {e}"),
            Err(_) => anyhow::bail!("a worker exited during start-up"),
        }
    }

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
        pinned: pin,
        allowed_cpus: allowed,
        deviations: hyper_stack::deviations(),
        burn_ns: ping_common::burn::per_request_ns(),
        io_uring_fds: None,
    }
    .print()?;

    for t in threads {
        let _ = t.join();
    }
    anyhow::bail!("all workers exited")
}

/// One worker thread: pin, build a current_thread runtime, bind, serve forever.
fn worker(listen: SocketAddr, cpu: Option<usize>, ready: Sender<Result<(), String>>) {
    if let Some(cpu) = cpu {
        let mut set = nix::sched::CpuSet::new();
        let pinned = set
            .set(cpu)
            .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set));
        if let Err(e) = pinned {
            let _ = ready.send(Err(format!("cannot pin to cpu {cpu}: {e}")));
            return;
        }
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
