//! `ping-may-minihttp`: the ping contract (services/README.md) on may + may_minihttp.
//!
//! Idiomatic shape (as may_minihttp's examples and TechEmpower entry): configure may's worker
//! count, then `HttpServiceFactory::start(addr)` (`HttpServer`'s loops, a service per connection); one accept coroutine, one coroutine per
//! connection, workers pinned by may to the allowed CPUs (its default). The library's limits
//! that we cannot work around from an `HttpService` are declared as deviations (`deviations.rs`).

mod deviations;
mod service;

use std::process::ExitCode;

use may_minihttp::HttpServiceFactory;
use ping_common::cli::Args;
use ping_common::startup::{Model, StartupLine};

const SERVICE: &str = "ping-may-minihttp";
/// may_minihttp writes this `Server` value into every response; it cannot be changed.
const SERVER_HEADER: &str = "M";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    // may's listener sets SO_REUSEPORT: check the port is really free first (and resolve :0).
    let listen = ping_common::listen::probe_listen(args.listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    // Must precede the first coroutine: the scheduler reads it once.
    may::config().set_workers(workers);
    // A factory rather than `HttpServer(service)`: the same accept and connection loops, and
    // each connection's service learns its socket (to close after an untrusted request).
    let server = service::Factory
        .start(listen)
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    StartupLine {
        server_header: SERVER_HEADER.into(),
        // may pins worker i to the i-th CPU of the affinity mask (core_affinity), cycling.
        pinned: may::config().get_worker_pin(),
        deviations: deviations::declared(),
        ..StartupLine::new(
            SERVICE,
            ("may", env!("PING_MAY_VERSION")),
            format!(
                "may_minihttp {} (HttpService)",
                env!("PING_MINIHTTP_VERSION")
            ),
            Model::Coroutine,
            workers,
            listen,
        )
    }
    .print()?;
    server
        .join()
        .map_err(|_| anyhow::anyhow!("the accept coroutine panicked"))?;
    anyhow::bail!("the accept coroutine exited")
}
