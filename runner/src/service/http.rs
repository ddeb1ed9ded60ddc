//! The runner's one HTTP/1.1 client, blocking: the start-up probe ([`status`]: the first
//! status line, timed), verification ([`get`], [`get_on`]: whole responses, `Connection:
//! close` not sent so servers behave as under keep-alive load) and churn ([`exchange`] on
//! connections it holds). One request line ([`request`]) for all of them.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

pub use super::tls::Stream;
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    pub version: u8,
    /// Lower-cased names; repeated headers joined with ", ".
    pub headers: BTreeMap<String, String>,
    pub header_count: usize,
    pub body: Vec<u8>,
    pub elapsed: Duration,
}

/// One GET on a new connection (over `tls`: HTTP/1.1 through the TLS handshake).
pub fn get(addr: SocketAddr, path: &str, timeout: Duration, tls: bool) -> Result<Response, String> {
    let start = Instant::now();
    let mut s = connect(addr, timeout, tls)?;
    get_on(&mut s, addr, path, start)
}

/// A connection to `addr` with `timeout` on connecting, reads and writes; over `tls`, with
/// the handshake done.
pub fn connect(addr: SocketAddr, timeout: Duration, tls: bool) -> Result<Stream, String> {
    let s = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    Stream::over(s, tls)
}

/// One GET on an open (keep-alive) connection to `addr`, read to the end of its body;
/// `elapsed` counts from `start`.
pub fn get_on(
    s: &mut (impl Read + Write),
    addr: SocketAddr,
    path: &str,
    start: Instant,
) -> Result<Response, String> {
    exchange(s, &request(path, addr, "verify"), start)
}

/// The request every runner client sends: GET `path` of `addr`, naming `purpose` in its
/// User-Agent (`pingmatrix-verify`, `-startup`, `-churn`) so a service's log tells them apart.
pub fn request(path: &str, addr: SocketAddr, purpose: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: pingmatrix-{purpose}\r\n\r\n")
        .into_bytes()
}

/// Sends `request` and reads only the response's status line: its code, or what came
/// instead. The start-up probe times the first 200 this way, whatever the body's framing (a
/// server the suite did not write may answer chunked).
pub fn status(s: &mut (impl Read + Write), request: &[u8]) -> Result<u16, String> {
    s.write_all(request).map_err(|e| format!("write: {e}"))?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    // "HTTP/1.1 200": the version and the code.
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) => return Err("closed before a status line".into()),
            Ok(k) => n += k,
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    let code = buf[..n]
        .strip_prefix(b"HTTP/1.1 ")
        .and_then(|rest| std::str::from_utf8(&rest[..3]).ok())
        .and_then(|c| c.parse().ok());
    code.ok_or_else(|| {
        format!(
            "first status line: {:?}",
            String::from_utf8_lossy(&buf[..n.min(40)])
        )
    })
}

/// Sends `request` (one whole request) on an open connection and reads its response to the
/// end of its body; `elapsed` counts from `start`.
pub fn exchange(
    s: &mut (impl Read + Write),
    request: &[u8],
    start: Instant,
) -> Result<Response, String> {
    s.write_all(request).map_err(|e| format!("write: {e}"))?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut r = httparse::Response::new(&mut headers);
        match r.parse(&buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let mut map: BTreeMap<String, String> = BTreeMap::new();
                for h in r.headers.iter() {
                    let v = String::from_utf8_lossy(h.value).to_string();
                    map.entry(h.name.to_ascii_lowercase())
                        .and_modify(|e| {
                            e.push_str(", ");
                            e.push_str(&v);
                        })
                        .or_insert(v);
                }
                let header_count = r.headers.len();
                let status = r.code.unwrap_or(0);
                let reason = r.reason.unwrap_or("").to_string();
                let version = r.version.unwrap_or(0);
                let len: Option<usize> = map
                    .get("content-length")
                    .and_then(|v| v.trim().parse().ok());
                let Some(len) = len else {
                    return Err("response has no valid Content-Length".into());
                };
                while buf.len() < head_len + len {
                    let n = s.read(&mut chunk).map_err(|e| format!("read body: {e}"))?;
                    if n == 0 {
                        return Err(format!(
                            "connection closed after {} of {len} body bytes",
                            buf.len() - head_len
                        ));
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = buf[head_len..head_len + len].to_vec();
                return Ok(Response {
                    status,
                    reason,
                    version,
                    headers: map,
                    header_count,
                    body,
                    elapsed: start.elapsed(),
                });
            }
            Ok(httparse::Status::Partial) => {}
            Err(e) => return Err(format!("unparseable response: {e}")),
        }
        let n = s.read(&mut chunk).map_err(|e| format!("read: {e}"))?;
        if n == 0 {
            return Err(format!("connection closed after {} bytes", buf.len()));
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.len() > 1 << 20 {
            return Err("response head larger than 1 MiB".into());
        }
    }
}
