//! How every hyper-served service listens and accepts: the contract's listening socket
//! handed to tokio, the work-stealing runtime, and the accept loop — accept, `TCP_NODELAY`,
//! the TLS handshake where the protocol is a TLS one, one task per connection on the current
//! runtime (with `current_thread`, it never leaves the core), served by the stack's builder
//! over [`CloseAwareIo`].

use std::error::Error;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use ping_common::cli::Args;
use ping_common::listen::{Share, bind_listener};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;
use tokio_rustls::TlsAcceptor;

use crate::CloseAwareIo;

type BoxError = Box<dyn Error + Send + Sync>;

/// The contract's listening socket (ping-common: backlog, SO_REUSEADDR, SO_REUSEPORT when
/// shared per core), taken by tokio. Call it inside the runtime that will accept on it.
pub fn listener(addr: SocketAddr, share: Share) -> io::Result<TcpListener> {
    let l = bind_listener(addr, share)?;
    l.set_nonblocking(true)?;
    TcpListener::from_std(l)
}

/// The multi-thread (work-stealing) runtime with `workers` threads: what `#[tokio::main]`
/// gives and what most tokio users run.
pub fn work_stealing(workers: usize) -> io::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
}

/// What [`serve`] serves: `--protocol`, and for a TLS one the acceptor, built once from
/// `ping_tls::server_config` (one configuration shared by every connection, and by every
/// per-core runtime: cloning shares it).
#[derive(Clone)]
pub struct Protocol {
    h2: bool,
    tls: Option<TlsAcceptor>,
}

impl Protocol {
    /// `--protocol` ("http/1.1", "h2c", "http/1.1+tls" or "h2+tls"), with `--tls-cert` and
    /// `--tls-key` loaded for a TLS one (`run_service` has checked they were given); the error
    /// says which file did not load.
    pub fn from_args(args: &Args) -> Result<Protocol, ping_tls::Error> {
        let tls = match args.tls() {
            Some((cert, key)) => Some(TlsAcceptor::from(Arc::new(ping_tls::server_config(
                &args.protocol,
                cert,
                key,
            )?))),
            None => None,
        };
        Ok(Protocol {
            h2: matches!(args.protocol.as_str(), "h2c" | "h2+tls"),
            tls,
        })
    }
}

/// hyper-util's `auto::Builder`: HTTP/2 (hyper's defaults, streams spawned on the current
/// runtime) and, on the same connection kind, HTTP/1.1 with the stack's settings.
fn auto_builder() -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .keep_alive(true)
        .pipeline_flush(true)
        .half_close(true)
        .title_case_headers(true)
        .max_buf_size(ping_common::MAX_HEAD_BYTES / 2);
    b
}

/// Serves every connection `listener` accepts with a fresh `service()`, forever, in
/// `protocol` (`--protocol`): "http/1.1" with the stack's builder; "h2c" — hyper-util's
/// `auto::Builder`, which takes HTTP/2 with prior knowledge (hyper's HTTP/2 defaults, streams
/// spawned on the current runtime) and, on the same port, HTTP/1.1 with the stack's settings,
/// as h2c servers do (the runner's readiness probe and checks speak HTTP/1.1); "http/1.1+tls"
/// — the TLS handshake (tokio-rustls), then the stack's builder; "h2+tls" — the handshake,
/// then `auto::Builder` where ALPN chose h2 and the stack's builder where it chose http/1.1
/// (or nothing). A failed handshake just drops the connection.
pub async fn serve<S, B>(
    listener: TcpListener,
    protocol: &Protocol,
    service: impl Fn() -> S,
) -> std::convert::Infallible
where
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let http = crate::builder();
    let h2 = protocol.h2.then(auto_builder);
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
        let service = service();
        if let Some(tls) = &protocol.tls {
            let (tls, http, h2) = (tls.clone(), http.clone(), h2.clone());
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(stream).await else {
                    return;
                };
                let alpn_h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                match h2 {
                    Some(h2) if alpn_h2 => {
                        let _ = h2.serve_connection(TokioIo::new(stream), service).await;
                    }
                    _ => {
                        let _ = http
                            .serve_connection(CloseAwareIo::new(stream), service)
                            .await;
                    }
                }
            });
            continue;
        }
        if let Some(h2) = &h2 {
            let h2 = h2.clone();
            tokio::spawn(async move {
                let _ = h2.serve_connection(TokioIo::new(stream), service).await;
            });
            continue;
        }
        let http = http.clone();
        tokio::spawn(async move {
            let _ = http
                .serve_connection(CloseAwareIo::new(stream), service)
                .await;
        });
    }
}
