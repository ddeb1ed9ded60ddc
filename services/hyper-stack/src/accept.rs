//! How every hyper-served service listens and accepts: the contract's listening socket
//! handed to tokio, the work-stealing runtime, and the accept loop — accept, `TCP_NODELAY`,
//! one task per connection on the current runtime (with `current_thread`, it never leaves
//! the core), served by the stack's builder over [`CloseAwareIo`].

use std::error::Error;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use ping_common::listen::{Share, bind_listener};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

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

/// Serves every connection `listener` accepts with a fresh `service()`, forever, in
/// `protocol` (`--protocol`): "http/1.1" with the stack's builder, or "h2c" — hyper-util's
/// `auto::Builder`, which takes HTTP/2 with prior knowledge (hyper's HTTP/2 defaults, streams
/// spawned on the current runtime) and, on the same port, HTTP/1.1 with the stack's settings,
/// as h2c servers do (the runner's readiness probe and checks speak HTTP/1.1).
pub async fn serve<S, B>(
    listener: TcpListener,
    protocol: &str,
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
    let h2 = (protocol == "h2c").then(|| {
        let mut b = auto::Builder::new(TokioExecutor::new());
        b.http1()
            .keep_alive(true)
            .pipeline_flush(true)
            .half_close(true)
            .title_case_headers(true)
            .max_buf_size(ping_common::MAX_HEAD_BYTES / 2);
        b
    });
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
