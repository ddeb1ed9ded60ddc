//! One connection: read (owned buffer, appended), answer every complete request (ping-common's
//! `http1::Session`, as ping-epoll), write all answers with one `write_all`; a `/sleep` first writes what is
//! ready, then waits on compio's timer.

use std::time::Duration;

use compio::BufResult;
use compio::buf::{IntoInner, IoBuf};
use compio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use ping_common::http1::{Next, Session};

const READ_CHUNK: usize = 8 * 1024;

/// Serves one connection: TCP (`TCP_NODELAY` already set), or TLS after its handshake.
pub async fn serve<S: AsyncRead + AsyncWrite>(mut stream: S) {
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut out: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut http = Session::new(crate::SERVICE);
    loop {
        while let Next::Sleep(ms) = http.process(&mut input, &mut out) {
            if !out.is_empty() {
                match write(&mut stream, out).await {
                    Some(o) => out = o,
                    None => return,
                }
            }
            compio::time::sleep(Duration::from_millis(ms)).await;
            http.wake(&mut out);
        }
        if !out.is_empty() {
            match write(&mut stream, out).await {
                Some(o) => out = o,
                None => return,
            }
        }
        if http.close_after {
            let _ = stream.shutdown().await;
            return;
        }
        if input.capacity() - input.len() < READ_CHUNK / 2 {
            input.reserve(READ_CHUNK);
        }
        // `append` reads into the spare capacity after the buffered bytes.
        let BufResult(res, buf) = stream.append(input).await;
        input = buf;
        match res {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Writes and clears `out` (and flushes: compio-tls buffers what it encrypts until then; a
/// TcpStream's flush does nothing); `None` if the peer is gone.
async fn write<S: AsyncWrite>(stream: &mut S, out: Vec<u8>) -> Option<Vec<u8>> {
    let BufResult(res, mut out) = match ping_common::split::cut(out.len()) {
        // `--split-write-every`: the same bytes as two writes.
        Some(k) => {
            let BufResult(first, head) = stream.write_all(out.slice(..k)).await;
            let out = head.into_inner();
            match first {
                Ok(()) => stream
                    .write_all(out.slice(k..))
                    .await
                    .map_buffer(|s| s.into_inner()),
                Err(e) => BufResult(Err(e), out),
            }
        }
        None => stream.write_all(out).await,
    };
    out.clear();
    res.ok()?;
    stream.flush().await.ok().map(|()| out)
}
