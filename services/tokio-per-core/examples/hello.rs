//! Plain tokio + hyper hello-world, per core: one current_thread runtime and SO_REUSEPORT
//! listener per thread (TechEmpower's hyper entry shape), answering every request with `pong`.
//! Used by `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-tokio-per-core`.
//! Usage: `hello <addr> <workers>`.

use std::convert::Infallible;
use std::net::SocketAddr;

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
    let addr: SocketAddr = argv
        .next()
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()
        .expect("address");
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(async move {
                    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
                    socket.set_reuseport(true).expect("SO_REUSEPORT");
                    socket.bind(addr).expect("bind");
                    let listener = socket.listen(1024).expect("listen");
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
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
