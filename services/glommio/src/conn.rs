//! One connection: read, answer every complete request (ping-common's `http1::Session`, as ping-epoll), write
//! all answers with one `write_all`; a `/sleep` first writes what is ready, then waits on
//! glommio's timer.

use std::net::Shutdown;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use ping_common::http1::{Next, Session};

const READ_CHUNK: usize = 8 * 1024;

pub async fn serve(mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut http = Session::new(crate::SERVICE);
    loop {
        while let Next::Sleep(ms) = http.process(&mut input, &mut out) {
            if !out.is_empty() && !write(&mut stream, &mut out).await {
                return;
            }
            glommio::timer::sleep(Duration::from_millis(ms)).await;
            http.wake(&mut out);
        }
        if !out.is_empty() && !write(&mut stream, &mut out).await {
            return;
        }
        if http.close_after {
            let _ = stream.shutdown(Shutdown::Write).await;
            return;
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => input.extend_from_slice(&chunk[..n]),
        }
    }
}

/// Writes and clears `out`; `false` if the peer is gone.
async fn write(stream: &mut TcpStream, out: &mut Vec<u8>) -> bool {
    let ok = match ping_common::split::cut(out.len()) {
        // `--split-write-every`: the same bytes as two writes.
        Some(k) => {
            stream.write_all(&out[..k]).await.is_ok() && stream.write_all(&out[k..]).await.is_ok()
        }
        None => stream.write_all(out).await.is_ok(),
    };
    out.clear();
    ok
}
