//! HTTP/2 over cleartext with prior knowledge (`--protocol h2c`), checked with raw frames: a
//! service serves it exactly when services/services.toml lists it — the preface answered with
//! SETTINGS and our SETTINGS acknowledged, `/ping` answered on a stream, a hundred concurrent
//! streams on one connection each answered, a bad preface answered with GOAWAY or a close;
//! a service that does not list it refuses `--protocol h2c` with exit 2 before it binds.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::read_some;
use crate::service::Service;

pub(crate) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
pub(crate) const DATA: u8 = 0;
pub(crate) const HEADERS: u8 = 1;
pub(crate) const RST_STREAM: u8 = 3;
pub(crate) const SETTINGS: u8 = 4;
pub(crate) const GOAWAY: u8 = 7;
pub(crate) const END_STREAM: u8 = 1;
pub(crate) const END_HEADERS: u8 = 4;
/// `:status: 200` as every HPACK encoder sends it: the static table's index 8.
pub(crate) const STATUS_200: u8 = 0x88;

/// A connection HTTP/2 frames are exchanged on — cleartext (h2c) or TLS (h2+tls) — whose
/// reads give up after the timeout last set.
pub(crate) trait Conn: Read + Write {
    fn read_timeout(&mut self, timeout: Duration) -> io::Result<()>;
}

impl Conn for TcpStream {
    fn read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.set_read_timeout(Some(timeout))
    }
}

fn declares(bin: &str) -> bool {
    ping_catalogue::find(bin).is_some_and(|s| s.serves("h2c"))
}

pub(crate) fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    v.extend_from_slice(&[kind, flags]);
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// GET /ping's header block, literal fields without indexing.
pub(crate) fn get_ping() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x04, 5];
    b.extend_from_slice(b"/ping");
    b.extend_from_slice(&[0x01, 9]);
    b.extend_from_slice(b"localhost");
    b
}

/// A frame read: (type, flags, stream, payload).
pub(crate) type Frame = (u8, u8, u32, Vec<u8>);

/// The next frame within `deadline`, or None when the connection closed or time ran out.
pub(crate) fn read_frame(s: &mut impl Conn, deadline: Instant) -> Option<Frame> {
    let mut head = [0u8; 9];
    read_all(s, &mut head, deadline)?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let mut payload = vec![0u8; len];
    read_all(s, &mut payload, deadline)?;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    Some((head[3], head[4], stream, payload))
}

fn read_all(s: &mut impl Conn, buf: &mut [u8], deadline: Instant) -> Option<()> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.checked_duration_since(Instant::now())?;
        s.read_timeout(left.max(Duration::from_millis(1))).ok()?;
        match read_some(s, &mut buf[got..]) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got += n,
        }
    }
    Some(())
}

/// A connection to `svc` with the preface and our (empty) SETTINGS sent.
fn open(svc: &Service) -> TcpStream {
    let mut s = TcpStream::connect(svc.addr()).expect("connect");
    let mut out = PREFACE.to_vec();
    out.extend(frame(SETTINGS, 0, 0, &[]));
    s.write_all(&out).expect("write the preface");
    s
}

/// Sends `n` GET /ping streams at once and reads until each ended: (status-200 streams, bodies
/// of 4 bytes, streams reset), or panics on a close, a GOAWAY or the time running out.
pub(crate) fn pings(s: &mut impl Conn, bin: &str, n: u32) -> (u32, u32, u32) {
    let block = get_ping();
    let mut out = Vec::new();
    for i in 0..n {
        out.extend(frame(HEADERS, END_STREAM | END_HEADERS, 1 + 2 * i, &block));
    }
    s.write_all(&out).expect("write the requests");
    let deadline = Instant::now() + Duration::from_secs(10);
    pings_read(s, n, deadline).unwrap_or_else(|e| panic!("{bin}: {e}"))
}

/// Reads until streams 1, 3, .. of `n` sent ended: (status-200 streams, bodies of 4 bytes,
/// streams reset); an error on a close, a GOAWAY or `deadline` passing.
pub(crate) fn pings_read(
    s: &mut impl Conn,
    n: u32,
    deadline: Instant,
) -> Result<(u32, u32, u32), String> {
    let (mut ok, mut pong, mut reset, mut ended) = (0, 0, 0, 0);
    let mut body = std::collections::HashMap::new();
    while ended < n {
        let (kind, flags, stream, payload) = read_frame(s, deadline)
            .ok_or_else(|| format!("{ended} of {n} streams ended, then nothing"))?;
        match kind {
            HEADERS if payload.first() == Some(&STATUS_200) => ok += 1,
            DATA => *body.entry(stream).or_insert(0) += payload.len(),
            RST_STREAM => {
                reset += 1;
                ended += 1;
            }
            GOAWAY => return Err(format!("GOAWAY after {ended} of {n} streams")),
            _ => {}
        }
        if flags & END_STREAM != 0 && (kind == HEADERS || kind == DATA) {
            ended += 1;
            if body.get(&stream) == Some(&4) {
                pong += 1;
            }
        }
    }
    Ok((ok, pong, reset))
}

/// Served where declared (it starts, and `/ping` is answered 200 "pong" on a stream);
/// refused with exit 2 and a clear message where not.
pub fn h2c_as_declared(bin: &str) {
    if !declares(bin) {
        let out = Command::new(crate::binary::path(bin))
            .args(["--listen", "127.0.0.1:0", "--protocol", "h2c"])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bin} --protocol h2c: {err}");
        assert!(
            out.stdout.is_empty(),
            "{bin} --protocol h2c wrote a start-up line"
        );
        assert!(
            err.contains("does not serve h2c"),
            "{bin}: unclear message {err:?}"
        );
        return;
    }
    let svc = Service::start(bin, &["--protocol", "h2c"]);
    let mut s = open(&svc);
    assert_eq!(
        pings(&mut s, bin, 1),
        (1, 1, 0),
        "{bin}: GET /ping over h2c"
    );
}

/// The server's first frame is SETTINGS, and it acknowledges ours.
pub fn h2c_preface_and_settings(bin: &str) {
    if !declares(bin) {
        return; // refused: `h2c_as_declared`
    }
    let svc = Service::start(bin, &["--protocol", "h2c"]);
    let mut s = open(&svc);
    let deadline = Instant::now() + Duration::from_secs(5);
    let first = read_frame(&mut s, deadline).expect("a frame after the preface");
    assert_eq!(
        (first.0, first.1 & 1, first.2),
        (SETTINGS, 0, 0),
        "{bin}: first frame"
    );
    assert_eq!(first.3.len() % 6, 0, "{bin}: SETTINGS payload");
    let acked = std::iter::from_fn(|| read_frame(&mut s, deadline))
        .any(|f| f.0 == SETTINGS && f.1 & 1 == 1);
    assert!(acked, "{bin}: our SETTINGS were not acknowledged");
}

/// A hundred concurrent streams on one connection: each answered 200 "pong", or refused with
/// RST_STREAM where the server advertised fewer — never left hanging.
pub fn h2c_concurrent_streams(bin: &str) {
    if !declares(bin) {
        return;
    }
    let svc = Service::start(bin, &["--protocol", "h2c"]);
    let mut s = open(&svc);
    let (ok, pong, reset) = pings(&mut s, bin, 100);
    assert_eq!(ok + reset, 100, "{bin}: {ok} answered, {reset} reset");
    assert_eq!(pong, ok, "{bin}: every answered stream's body is pong");
    assert!(ok >= 100 - reset && ok > 0, "{bin}");
}

/// A bad preface is answered with GOAWAY or a close within 2 s.
pub fn h2c_bad_preface(bin: &str) {
    if !declares(bin) {
        return;
    }
    let svc = Service::start(bin, &["--protocol", "h2c"]);
    if let Err(e) = h2c_bad_preface_at(svc.addr()) {
        panic!("{bin}: {e}");
    }
}

/// [`h2c_bad_preface`]'s core, against a server at `addr`.
pub fn h2c_bad_preface_at(addr: SocketAddr) -> Result<(), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    // HTTP/2's preface with its last line wrong: not HTTP/1.1 either.
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .map_err(|e| format!("write: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = loop {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break false;
        };
        let _ = s.set_read_timeout(Some(left.max(Duration::from_millis(1))));
        match read_some(&mut s, &mut buf) {
            Ok(0) => break true,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(_) => break false,
        }
    };
    // A GOAWAY among the frames it sent, or (HTTP/1.1's 400 and) a close.
    let mut goaway = false;
    let mut at = 0;
    while at + 9 <= got.len() {
        goaway |= got[at + 3] == GOAWAY;
        at += 9 + u32::from_be_bytes([0, got[at], got[at + 1], got[at + 2]]) as usize;
    }
    if closed || goaway {
        Ok(())
    } else {
        Err(format!(
            "a bad preface left the connection open for 2 s (answered {:?})",
            String::from_utf8_lossy(&got[..got.len().min(64)])
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;

    /// A server that answers anything with an HTTP/1.1 200 and keeps the connection open:
    /// `h2c_bad_preface` must fail against it.
    #[test]
    fn bad_preface_check_fails_against_a_server_that_answers_200_and_stays_open() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf);
                    let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong");
                    std::thread::sleep(Duration::from_secs(5));
                });
            }
        });
        let err = h2c_bad_preface_at(addr).unwrap_err();
        assert!(err.contains("left the connection open"), "{err}");
        assert!(err.contains("HTTP/1.1 200 OK"), "{err}");
    }

    /// The same check passes against a server that closes at once.
    #[test]
    fn bad_preface_check_passes_against_a_server_that_closes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                let _ = s.read(&mut [0u8; 64]);
                drop(s);
            }
        });
        assert_eq!(h2c_bad_preface_at(addr), Ok(()));
    }
}
