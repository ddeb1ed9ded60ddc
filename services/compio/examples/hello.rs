//! Plain compio hello-world: one runtime per worker thread (affinity CPU i), its own SO_REUSEPORT
//! listener, a minimal httparse loop answering every request with a fixed `pong` response (like
//! monoio's hello). Used by `scripts/experiments/wrapper-cost.sh` as the baseline for
//! `ping-compio`. Usage: `hello <addr> <workers>`.

use std::collections::HashSet;
use std::net::SocketAddr;

use compio::BufResult;
use compio::io::{AsyncReadExt, AsyncWriteExt};
use compio::net::{TcpListener, TcpStream};
use socket2::{Domain, Socket, Type};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";

async fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut input: Vec<u8> = Vec::with_capacity(8192);
    let mut output: Vec<u8> = Vec::with_capacity(8192);
    loop {
        if input.capacity() - input.len() < 4096 {
            input.reserve(8192);
        }
        let BufResult(res, buf) = stream.append(input).await;
        input = buf;
        if !matches!(res, Ok(n) if n > 0) {
            return;
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
        let BufResult(res, out) = stream.write_all(output).await;
        output = out;
        output.clear();
        if res.is_err() {
            return;
        }
    }
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
        .map(|i| {
            std::thread::spawn(move || {
                let rt = compio::runtime::RuntimeBuilder::new()
                    .thread_affinity(HashSet::from([i]))
                    .build()
                    .expect("compio runtime");
                rt.block_on(async move {
                    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None).unwrap();
                    s.set_reuse_port(true).expect("SO_REUSEPORT");
                    s.bind(&addr.into()).expect("bind");
                    s.listen(1024).expect("listen");
                    let listener = TcpListener::from_std(s.into()).expect("listener");
                    loop {
                        if let Ok((s, _)) = listener.accept().await {
                            compio::runtime::spawn(serve(s)).detach();
                        }
                    }
                });
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
