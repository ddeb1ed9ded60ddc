//! Plain glommio hello-world: one executor per worker (placed on CPU i), its own listener
//! (SO_REUSEPORT by glommio), a minimal httparse loop answering every request with a fixed `pong`
//! response (like monoio's hello). Used by `scripts/experiments/wrapper-cost.sh` as the baseline
//! for `ping-glommio`. Usage: `hello <addr> <workers>`.

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";

async fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut chunk = vec![0u8; 8192];
    let mut input: Vec<u8> = Vec::with_capacity(8192);
    let mut output: Vec<u8> = Vec::with_capacity(8192);
    loop {
        match stream.read(&mut chunk).await {
            Ok(n) if n > 0 => input.extend_from_slice(&chunk[..n]),
            _ => return,
        }
        let mut start = 0;
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&input[start..]) {
                Ok(httparse::Status::Complete(n)) => {
                    start += n;
                    output.extend_from_slice(RESPONSE);
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => return,
            }
        }
        input.drain(..start);
        if stream.write_all(&output).await.is_err() {
            return;
        }
        output.clear();
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let addr = argv.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let executors: Vec<_> = (0..workers)
        .map(|i| {
            let addr = addr.clone();
            LocalExecutorBuilder::new(Placement::Fixed(i))
                .spawn(move || async move {
                    let listener = TcpListener::bind(addr).expect("bind");
                    loop {
                        if let Ok(s) = listener.accept().await {
                            glommio::spawn_local(serve(s)).detach();
                        }
                    }
                })
                .expect("glommio executor")
        })
        .collect();
    for e in executors {
        let _ = e.join();
    }
}
