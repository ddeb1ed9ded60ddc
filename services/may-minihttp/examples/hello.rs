//! Plain may_minihttp hello-world (the library's own example shape), used by
//! `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-may-minihttp`.
//! Usage: `hello <addr> <workers>`; answers every request with `pong`.

use std::io;

use may_minihttp::{HttpServer, HttpService, Request, Response};

#[derive(Clone)]
struct Hello;

impl HttpService for Hello {
    fn call(&mut self, _req: Request, rsp: &mut Response) -> io::Result<()> {
        rsp.body("pong");
        Ok(())
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let addr = argv.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    may::config().set_workers(workers);
    let server = HttpServer(Hello).start(addr).expect("bind");
    server.join().expect("server");
}
