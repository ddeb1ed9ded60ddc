//! One connection: a hand-written HTTP/1.1 loop over httparse.
//!
//! Read into an owned buffer, answer every complete request in it (in order) into one output
//! buffer, write it with one `write_all`. Limits per the contract: heads over 64 KiB → 431 and
//! close, more than 64 headers → 431 and close, unparsable → 400 and close. Request bodies
//! (Content-Length) are skipped; chunked request bodies are refused with 400.

use std::time::Duration;

use monoio::buf::{IoBuf, IoBufMut};
use monoio::io::{AsyncReadRent, AsyncWriteRent, AsyncWriteRentExt};
use ping_common::MAX_HEAD_BYTES;
use ping_common::request::{Parsed, parse};
use ping_common::response::{Reply, Status};
use ping_common::route::Route;

use crate::SERVICE;

const READ_CHUNK: usize = 8 * 1024;

/// Serves one connection: TCP, or TLS after its handshake.
pub async fn serve<S: AsyncReadRent + AsyncWriteRent>(mut stream: S) {
    let mut input: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut output: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    // Body bytes of the last request still to be discarded.
    let mut skip: u64 = 0;
    loop {
        if input.capacity() - input.len() < READ_CHUNK / 2 {
            input.reserve(READ_CHUNK);
        }
        let filled = input.len();
        let (res, slice) = stream.read(input.slice_mut(filled..)).await;
        input = slice.into_inner();
        match res {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }

        let mut start = 0;
        let mut close = false;
        loop {
            if skip > 0 {
                let n = skip.min((input.len() - start) as u64);
                start += n as usize;
                skip -= n;
                if skip > 0 {
                    break;
                }
            }
            if start == input.len() {
                break;
            }
            match parse(&input[start..]) {
                Parsed::Partial => {
                    if input.len() - start > MAX_HEAD_BYTES {
                        Reply::empty(Status::HeadersTooLarge).encode(SERVICE, false, &mut output);
                        close = true;
                    }
                    break;
                }
                Parsed::Invalid(status) => {
                    Reply::empty(status).encode(SERVICE, false, &mut output);
                    close = true;
                    break;
                }
                Parsed::Request {
                    head_len,
                    route,
                    keep_alive,
                    said_close,
                    body_len,
                } => {
                    start += head_len;
                    skip = body_len;
                    if let Route::Sleep { ms } = route {
                        // Answer what is ready before waiting.
                        if !output.is_empty() {
                            match write(&mut stream, output).await {
                                Some(o) => output = o,
                                None => return,
                            }
                        }
                        monoio::time::sleep(Duration::from_millis(ms)).await;
                    }
                    ping_common::burn::per_request();
                    Reply::for_route(route).encode(SERVICE, said_close, &mut output);
                    if !keep_alive {
                        close = true;
                        break;
                    }
                }
            }
        }
        input.drain(..start);
        if !output.is_empty() {
            match write(&mut stream, output).await {
                Some(o) => output = o,
                None => return,
            }
        }
        if close {
            let _ = stream.shutdown().await;
            return;
        }
    }
}

/// Writes and clears `out`; `None` if the peer is gone.
async fn write<S: AsyncWriteRent>(stream: &mut S, out: Vec<u8>) -> Option<Vec<u8>> {
    let (res, mut out) = match ping_common::split::cut(out.len()) {
        // `--split-write-every`: the same bytes as two writes.
        Some(k) => {
            let (first, head) = stream.write_all(out.slice(..k)).await;
            let out = head.into_inner();
            match first {
                Ok(_) => {
                    let (r, tail) = stream.write_all(out.slice(k..)).await;
                    (r, tail.into_inner())
                }
                Err(e) => (Err(e), out),
            }
        }
        None => stream.write_all(out).await,
    };
    out.clear();
    res.ok().map(|_| out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(buf: &[u8]) -> (usize, Route, bool, bool, u64) {
        match parse(buf) {
            Parsed::Request {
                head_len,
                route,
                keep_alive,
                said_close,
                body_len,
            } => (head_len, route, keep_alive, said_close, body_len),
            Parsed::Partial => panic!("partial"),
            Parsed::Invalid(s) => panic!("invalid: {s:?}"),
        }
    }

    #[test]
    fn keep_alive_rules() {
        let (_, r, ka, close, _) = request(b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!((r, ka, close), (Route::Ping, true, false));
        let (_, _, ka, close, _) = request(b"GET /ping HTTP/1.1\r\nConnection: Close\r\n\r\n");
        assert_eq!((ka, close), (false, true));
        let (_, _, ka, _, _) = request(b"GET /ping HTTP/1.0\r\n\r\n");
        assert!(!ka);
        let (_, _, ka, _, _) = request(b"GET /ping HTTP/1.0\r\nConnection: x, keep-alive\r\n\r\n");
        assert!(ka);
    }

    #[test]
    fn bodies_and_limits() {
        let req = b"POST /ping HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello";
        let (len, r, _, _, body) = request(req);
        assert_eq!((len, r, body), (req.len() - 5, Route::MethodNotAllowed, 5));
        assert!(matches!(
            parse(b"GET /ping HTTP/1.1\r\nHost"),
            Parsed::Partial
        ));
        for bad in [
            &b"GET /ping HTTP/1.1\r\nContent-Length: x\r\n\r\n"[..],
            b"GET /ping HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"GET /ping HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"\x00garbage\r\n\r\n",
        ] {
            assert!(matches!(parse(bad), Parsed::Invalid(Status::BadRequest)));
        }
        let many: String = (0..=ping_common::MAX_HEADERS)
            .map(|i| format!("X{i}: v\r\n"))
            .collect();
        let req = format!("GET /ping HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(
            parse(req.as_bytes()),
            Parsed::Invalid(Status::HeadersTooLarge)
        ));
    }
}
