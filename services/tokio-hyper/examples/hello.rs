//! Plain tokio + hyper hello-world (the runtime's idiomatic minimum), used by
//! `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-tokio-hyper`.
//! Usage: `hello <addr> <workers>`; answers every request with `pong`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

async fn ping(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(b"pong"))))
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let addr = argv.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
        let mut http = http1::Builder::new();
        http.keep_alive(true).pipeline_flush(true);
        loop {
            let Ok((s, _)) = listener.accept().await else {
                continue;
            };
            let _ = s.set_nodelay(true);
            let http = http.clone();
            tokio::spawn(async move {
                let _ = http
                    .serve_connection(TokioIo::new(s), service_fn(ping))
                    .await;
            });
        }
    });
}
