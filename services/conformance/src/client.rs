//! A raw HTTP/1.1 client over `std::net::TcpStream`: bytes in, bytes out, nothing hidden.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Generous per-read timeout: the machine is shared and slow.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// One response as it came off the wire.
#[derive(Debug, Clone)]
pub struct RawResponse {
    /// Head and body bytes, exactly as received.
    pub bytes: Vec<u8>,
    pub version: String,
    pub status: u16,
    pub reason: String,
    /// Header lines in order, names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// First value of a header, name compared case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// `read`, again after EINTR. A blocking read with a receive timeout (SO_RCVTIMEO, which
/// every check sets) fails with EINTR instead of restarting when the process is interrupted,
/// even by nothing it handles (signal(7)); std's `read` returns it. With the browser test
/// beside the suite, 4 checks in 9 runs read it and called it a reset.
pub fn read_some(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// How a read ended when no (complete) response came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoResponse {
    /// Orderly close (EOF), possibly after `partial` bytes.
    Closed { partial: usize },
    /// Reset by the peer (a close with unread data in its buffer).
    Reset,
    /// Nothing arrived within the timeout; the connection is still open.
    TimedOut,
    /// Bytes that are not an HTTP response.
    Malformed(String),
}

impl NoResponse {
    pub fn is_close(&self) -> bool {
        matches!(self, NoResponse::Closed { .. } | NoResponse::Reset)
    }
}

pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream.set_nodelay(true).expect("nodelay");
        stream
            .set_read_timeout(Some(READ_TIMEOUT))
            .expect("timeout");
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes all bytes; `false` if the peer already closed/reset.
    pub fn send(&mut self, bytes: &[u8]) -> bool {
        self.stream.write_all(bytes).is_ok()
    }

    /// Sends and panics on failure.
    pub fn send_ok(&mut self, bytes: &[u8]) {
        self.stream
            .write_all(bytes)
            .unwrap_or_else(|e| panic!("write failed: {e}"));
    }

    /// Half-close: shuts down the write side (sends FIN); the read side stays open.
    pub fn shutdown_write(&self) {
        self.stream
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown(SHUT_WR)");
    }

    pub fn set_read_timeout(&self, t: Duration) {
        self.stream.set_read_timeout(Some(t)).expect("timeout");
    }

    /// Reads one complete response (Content-Length framed).
    pub fn read_response(&mut self) -> Result<RawResponse, NoResponse> {
        loop {
            if let Some(r) = self.try_take_response()? {
                return Ok(r);
            }
            let mut chunk = [0u8; 16 * 1024];
            match read_some(&mut self.stream, &mut chunk) {
                Ok(0) => {
                    return Err(NoResponse::Closed {
                        partial: self.buf.len(),
                    });
                }
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(NoResponse::TimedOut);
                }
                Err(_) => return Err(NoResponse::Reset),
            }
        }
    }

    /// `read_response` with a temporary read timeout.
    pub fn read_response_within(&mut self, t: Duration) -> Result<RawResponse, NoResponse> {
        self.set_read_timeout(t);
        let r = self.read_response();
        self.set_read_timeout(READ_TIMEOUT);
        r
    }

    /// Reads one response and panics if there is none.
    pub fn expect_response(&mut self, what: &str) -> RawResponse {
        self.read_response()
            .unwrap_or_else(|e| panic!("{what}: no response: {e:?}"))
    }

    /// After everything expected was read: does the peer close within `timeout`?
    pub fn closes_within(&mut self, timeout: Duration) -> bool {
        self.set_read_timeout(timeout);
        let mut chunk = [0u8; 4096];
        let deadline = Instant::now() + timeout;
        loop {
            match read_some(&mut self.stream, &mut chunk) {
                Ok(0) => return true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return false;
                }
                Err(_) => return true,
            }
            if Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// Bytes received but not yet returned as a response.
    pub fn leftover(&self) -> &[u8] {
        &self.buf
    }

    fn try_take_response(&mut self) -> Result<Option<RawResponse>, NoResponse> {
        let Some(head_end) = find(&self.buf, b"\r\n\r\n") else {
            if !self.buf.is_empty() && !b"HTTP/".starts_with(&self.buf[..self.buf.len().min(5)]) {
                return Err(NoResponse::Malformed(lossy(&self.buf)));
            }
            return Ok(None);
        };
        let head = std::str::from_utf8(&self.buf[..head_end])
            .map_err(|_| NoResponse::Malformed(lossy(&self.buf)))?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or_default().to_owned();
        let status: u16 = parts
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| NoResponse::Malformed(status_line.to_owned()))?;
        let reason = parts.next().unwrap_or_default().to_owned();
        let mut headers = Vec::new();
        for line in lines {
            let (n, v) = line
                .split_once(':')
                .ok_or_else(|| NoResponse::Malformed(line.to_owned()))?;
            headers.push((n.to_owned(), v.trim().to_owned()));
        }
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .ok_or_else(|| NoResponse::Malformed(format!("no Content-Length in {head:?}")))?;
        let total = head_end + 4 + len;
        if self.buf.len() < total {
            return Ok(None);
        }
        let bytes: Vec<u8> = self.buf.drain(..total).collect();
        let body = bytes[head_end + 4..].to_vec();
        Ok(Some(RawResponse {
            bytes,
            version,
            status,
            reason,
            headers,
            body,
        }))
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned()
}

/// `GET <target> HTTP/1.1` with a Host header and optional extra header lines.
pub fn get(target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: localhost\r\n{extra}\r\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails with EINTR `interrupts` times, then reads `data`, then reads the end (0).
    struct Interrupted {
        interrupts: usize,
        data: &'static [u8],
    }

    impl Read for Interrupted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.interrupts > 0 {
                self.interrupts -= 1;
                return Err(ErrorKind::Interrupted.into());
            }
            let n = self.data.len().min(buf.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_read_interrupted_by_eintr_is_read_again_and_other_errors_pass() {
        let mut r = Interrupted {
            interrupts: 3,
            data: b"HTTP/1.1 200 OK",
        };
        let mut buf = [0u8; 64];
        assert_eq!(read_some(&mut r, &mut buf).unwrap(), 15);
        assert_eq!(read_some(&mut r, &mut buf).unwrap(), 0);
        struct Reset;
        impl Read for Reset {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(ErrorKind::ConnectionReset.into())
            }
        }
        let e = read_some(&mut Reset, &mut buf).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ConnectionReset);
    }
}
