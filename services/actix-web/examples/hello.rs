//! Plain actix-web hello-world (actix-web's own minimal example shape, with TCP_NODELAY as the
//! service sets it), used by
//! `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-actix-web`.
//! Usage: `hello <addr> <workers>`; answers `/ping` with `pong`.

use actix_web::{App, HttpServer, web};

fn main() -> std::io::Result<()> {
    let mut argv = std::env::args().skip(1);
    let addr = argv.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    actix_web::rt::System::new().block_on(
        HttpServer::new(|| App::new().route("/ping", web::get().to(|| async { "pong" })))
            .workers(workers)
            .tcp_nodelay(true)
            .bind(addr)?
            .run(),
    )
}
