//! Plain axum hello-world (axum's own minimal example shape: `Router` + `axum::serve`, with
//! TCP_NODELAY as axum's docs show), used by `scripts/experiments/wrapper-cost.sh` as the baseline
//! for `ping-axum`. Usage: `hello <addr> <workers>`; answers `/ping` with `pong`.

use axum::Router;
use axum::routing::get;
use axum::serve::ListenerExt;

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
        let app = Router::new().route("/ping", get(|| async { "pong" }));
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .expect("bind")
            .tap_io(|s| {
                let _ = s.set_nodelay(true);
            });
        axum::serve(listener, app).await.expect("serve");
    });
}
