//! Plain monoio hello-world: thread-per-core, SO_REUSEPORT listener per thread, a minimal
//! httparse loop answering every request with a fixed `pong` response. Used by
//! `scripts/experiments/wrapper-cost.sh` as the baseline for `ping-monoio`.
//! Usage: `hello <addr> <workers>`.

use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{FusionDriver, RuntimeBuilder};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";

async fn serve(mut stream: TcpStream) {
    let mut input: Vec<u8> = Vec::with_capacity(8192);
    let mut output: Vec<u8> = Vec::with_capacity(8192);
    loop {
        if input.capacity() - input.len() < 4096 {
            input.reserve(8192);
        }
        let filled = input.len();
        let (res, slice) = stream.read(input.slice_mut(filled..)).await;
        input = slice.into_inner();
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
        let (res, out) = stream.write_all(output).await;
        output = out;
        output.clear();
        if res.is_err() {
            return;
        }
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let addr = argv.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let workers: usize = argv.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let threads: Vec<_> = (0..workers)
        .map(|i| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let _ = monoio::utils::bind_to_cpu_set([i]);
                let mut rt = RuntimeBuilder::<FusionDriver>::new()
                    .with_entries(1024)
                    .enable_timer()
                    .build()
                    .expect("monoio runtime");
                rt.block_on(async move {
                    let listener = TcpListener::bind(addr).expect("bind");
                    loop {
                        if let Ok((s, _)) = listener.accept().await {
                            let _ = s.set_nodelay(true);
                            monoio::spawn(serve(s));
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
