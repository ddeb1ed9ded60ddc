//! `ping-actix-web`: the ping contract (services/README.md) on actix-web 4.
//!
//! Idiomatic shape (actix-web's own examples): an `App` factory with one `web::resource` per
//! route, handlers with extractors, `web::Json` for `/json`, a default service for 404, run by
//! `HttpServer::new(..).workers(n).bind(addr)?.run()`. actix-web runs one single-threaded
//! actix-rt (tokio current_thread) runtime per worker thread; one accept thread hands each new
//! connection to a worker (no SO_REUSEPORT, no work stealing, no pinning).
//!
//! Three settings serve the contract: `tcp_nodelay(true)` (as the other services set it),
//! `disable_signals()` (SIGTERM keeps its default disposition: exit at once, not actix's 30 s
//! graceful drain), and a middleware that adds the `Server` header and asks actix-http for
//! canonical (Camel-Case) header names. What actix-http does its own way is declared
//! (`deviations()`).

mod app;

use std::process::ExitCode;

use actix_web::HttpServer;
use ping_common::cli::Args;
use ping_common::startup::{Deviation, Model, StartupLine, deviation};

const SERVICE: &str = "ping-actix-web";

fn main() -> ExitCode {
    ping_common::cli::run_service(SERVICE, run)
}

fn run(args: Args) -> anyhow::Result<()> {
    let workers = args.workers();
    // h2+tls (services.toml lists no http/1.1+tls for this service: `run_service` refuses it).
    // Loaded before anything binds: a certificate or key that does not load is a bad argument.
    let tls = args.tls().map(|(cert, key)| {
        let mut config = ping_tls::server_config(&args.protocol, cert, key)
            .unwrap_or_else(|e| ping_common::cli::refuse(e));
        // actix-http puts h2 and http/1.1 first in ALPN itself (its `http2` feature), which
        // is exactly h2+tls' list; ours appended after them would only repeat it.
        config.alpn_protocols.clear();
        config
    });
    // The contract's listening socket (ping-common: backlog, SO_REUSEADDR) rather than `bind`,
    // whose backlog is actix's own (1024 in HttpServer, 2048 in actix-server).
    let listener =
        ping_common::listen::bind_listener(args.listen, ping_common::listen::Share::Exclusive)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(app::app)
            .workers(workers)
            // As every other service but may_minihttp (actix leaves the OS default).
            .tcp_nodelay(true)
            .disable_signals();
        // h2c: HTTP/2 with prior knowledge and HTTP/1.1 on the one port (actix's own sniffing).
        // h2+tls: HTTP/2 by ALPN h2 and HTTP/1.1 by ALPN http/1.1 on the one port, after the
        // TLS handshake (actix-tls, 3 s handshake timeout); TCP_NODELAY as on cleartext.
        let server = if let Some(config) = tls {
            server.listen_rustls_0_23(listener, config)
        } else if args.protocol == "h2c" {
            server.listen_auto_h2c(listener)
        } else {
            server.listen(listener)
        }
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
        let listen = *server
            .addrs()
            .first()
            .ok_or_else(|| anyhow::anyhow!("no bound address"))?;
        StartupLine {
            deviations: deviations(),
            ..StartupLine::new(
                SERVICE,
                ("actix-rt", env!("PING_ACTIX_RT_VERSION")),
                format!(
                    "actix-web {} (App) on actix-http {}, tokio {}",
                    env!("PING_ACTIX_WEB_VERSION"),
                    env!("PING_ACTIX_HTTP_VERSION"),
                    env!("PING_TOKIO_VERSION")
                ),
                // One single-threaded runtime per worker, connections handed out by an accept
                // thread, never moved: no work stealing.
                Model::ThreadPerCore,
                workers,
                listen,
            )
        }
        .print()?;
        server.run().await?;
        anyhow::bail!("the server stopped")
    })
}

fn deviations() -> Vec<Deviation> {
    vec![
        Deviation::new(
            app::HEADER_ORDER,
            "actix-http writes Content-Length (and Connection) right after the status line, \
             the response's headers in hash-map order, and its own Date last",
        ),
        Deviation::new(
            deviation::STATUS_LINE_HTTP10,
            "actix-http answers HTTP/1.0 requests with an HTTP/1.0 status line",
        ),
        Deviation::new(
            app::HEAD_LIMIT_128K,
            "actix-http buffers a request head up to 128 KiB (its hard-coded MAX_BUFFER_SIZE): a \
             complete head under that is served, a larger one gets actix's 431",
        ),
        Deviation::new(
            deviation::PIPELINE_ERROR_DROPS_BATCH,
            "a malformed request after valid ones in the same read gets actix's 400 and a \
             close; the responses to the earlier requests are dropped (as observed; whether it \
             happens depends on how the batch is read)",
        ),
        Deviation::new(
            app::CLOSE_ANSWERS_PIPELINED,
            "actix-http answers every complete request that came in the same read after a \
             `Connection: close` or HTTP/1.0 request, and the connection then closes or stays \
             open as the last of them asks (its dispatcher takes keep-alive from each request \
             in turn; a service sees no connection state to stop it)",
        ),
        Deviation::new(
            deviation::LIBRARY_ERROR_RESPONSES,
            "actix-http answers unparsable and oversized heads itself (400/431 without a \
             Server header) or closes the connection",
        ),
    ]
}

#[cfg(test)]
mod tests {
    /// What actix-http offers in ALPN with its `http2` feature (h2, then http/1.1) is what
    /// ping-tls says h2+tls offers, and is why http/1.1+tls (ALPN http/1.1 alone) is not
    /// served: actix-http would offer h2 there too.
    #[test]
    fn actix_alpn_is_h2_tls_alpn() {
        assert_eq!(
            ping_tls::alpn("h2+tls").unwrap(),
            [b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }
}
