//! Over TLS, against servers loadgen did not write (rustls through tokio-rustls, the `h2`
//! crate) with the suite's certificate policy (`ping-tls`: TLS 1.3, RSA-2048, ALPN of what is
//! served): exact accounting for HTTP/1.1 and h2, the handshake's outcome and the set-up time
//! recorded, and a server that does not offer the protocol asked for counted as failed
//! connections with the reason said, never a hang.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use loadgen::{LoadSpec, Protocol};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{assert_adds_up, closed, open};

fn dir() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("loadgen-tls-it-{}", std::process::id()))
}

/// Removes [`dir`] when the test process exits: no key outlives it.
extern "C" fn remove_dir() {
    let _ = std::fs::remove_dir_all(dir());
}

/// The certificate and key for every server here, made once per test process.
fn cert_dir() -> &'static std::path::PathBuf {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = dir();
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: registers a plain function with no preconditions, run once at exit.
        unsafe { libc::atexit(remove_dir) };
        ping_tls::TestCert::rsa2048().unwrap().write(&dir).unwrap();
        dir
    })
}

/// A TLS server for `protocol` ("h2+tls" or "http/1.1+tls") answering every request with
/// "pong"; it runs until the test process ends.
fn tls_server(protocol: &'static str) -> SocketAddr {
    let dir = cert_dir();
    let config =
        ping_tls::server_config(protocol, &dir.join("cert.pem"), &dir.join("key.pem")).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            loop {
                let Ok((sock, _)) = l.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(sock).await else {
                        return;
                    };
                    if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                        serve_h2(tls).await;
                    } else {
                        serve_http11(tls).await;
                    }
                });
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

async fn serve_h2(tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>) {
    let Ok(mut conn) = h2::server::Builder::new().handshake::<_, Bytes>(tls).await else {
        return;
    };
    while let Some(Ok((_req, mut respond))) = conn.accept().await {
        let rsp = http::Response::builder().status(200).body(()).unwrap();
        if let Ok(mut send) = respond.send_response(rsp, false) {
            let _ = send.send_data(Bytes::from_static(b"pong"), true);
        }
    }
}

/// HTTP/1.1 keep-alive, pipelining allowed: one response per request head.
async fn serve_http11(mut tls: tokio_rustls::server::TlsStream<tokio::net::TcpStream>) {
    const PONG: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong";
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let Ok(n) = tls.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            out.extend_from_slice(PONG);
        }
        if !out.is_empty() && tls.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn over(protocol: Protocol, mut s: LoadSpec) -> LoadSpec {
    s.protocol = protocol;
    s
}

#[test]
fn h2_over_tls_is_counted_exactly_and_says_what_it_negotiated() {
    let addr = tls_server("h2+tls");
    let spec = LoadSpec {
        requests: Some(3_000),
        expect_body_bytes: Some(4),
        ..over(
            Protocol::H2Tls,
            closed(format!("https://localhost:{}/ping", addr.port()), 4, 10),
        )
    };
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    let c = &r.counts;
    assert_eq!(
        (c.sent, c.ok, c.errors.total(), c.timeouts),
        (3_000, 3_000, 0, 0),
        "{c:?} {:?}",
        r.problems
    );
    assert_eq!(r.connections.established, 4);
    let tls = r.tls.as_ref().expect("the handshake's outcome");
    assert_eq!((tls.version.as_str(), tls.alpn.as_str()), ("TLSv1_3", "h2"));
    assert!(tls.suite.starts_with("TLS13_"), "{tls:?}");
    assert_eq!(tls.server_key, ping_tls::KEY_TYPE);
    assert!(!tls.chain_verified);
    let setup = r.connection_setup.as_ref().expect("set-up times");
    assert_eq!(setup.us.samples, 4);
    assert!(setup.us.min > 0);
    let text = loadgen::text::summary(&r);
    assert!(
        text.contains("TCP + TLS handshake") && text.contains("ALPN h2"),
        "{text}"
    );
}

#[test]
fn http11_over_tls_pipelines_and_reconnects_exactly() {
    let addr = tls_server("http/1.1+tls");
    let url = format!("https://localhost:{}/ping", addr.port());
    let spec = LoadSpec {
        requests: Some(2_000),
        expect_body_bytes: Some(4),
        ..over(Protocol::Http11Tls, closed(url.clone(), 2, 8))
    };
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!((r.counts.ok, r.counts.errors.total()), (2_000, 0));
    assert_eq!(r.tls.as_ref().unwrap().alpn, "http/1.1");
    // A connection per request: every one a full handshake, each set-up timed.
    let spec = LoadSpec {
        requests: Some(50),
        keepalive: false,
        ..over(Protocol::Http11Tls, closed(url.clone(), 1, 1))
    };
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(
        (r.counts.ok, r.counts.errors.total()),
        (50, 0),
        "{:?}",
        r.problems
    );
    assert!(r.connection_setup.unwrap().us.samples >= 50);
    // The open loop reads through the session too.
    let spec = LoadSpec {
        duration_ms: Some(300),
        ..over(Protocol::Http11Tls, open(url, 500.0, 4))
    };
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!(
        r.counts.ok >= 140 && r.counts.errors.total() == 0,
        "{:?}",
        r.counts
    );
}

#[test]
fn a_server_without_the_protocol_asked_fails_its_connections_with_the_reason() {
    // Serves HTTP/1.1 over TLS only: ALPN h2 is not offered, so no connection may count.
    let addr = tls_server("http/1.1+tls");
    let spec = LoadSpec {
        duration_ms: Some(300),
        ..over(
            Protocol::H2Tls,
            closed(format!("https://localhost:{}/ping", addr.port()), 1, 4),
        )
    };
    let t = std::time::Instant::now();
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!((r.connections.established, r.counts.ok), (0, 0));
    assert!(r.connections.failed > 0);
    assert!(
        // rustls' server answers with an alert; one that chose otherwise would be named.
        r.problems
            .iter()
            .any(|p| p.contains("NoApplicationProtocol") || p.contains("ALPN")),
        "{:?}",
        r.problems
    );
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_scheme_that_does_not_fit_the_protocol_is_refused() {
    for (protocol, url) in [
        (Protocol::H2Tls, "http://127.0.0.1:9/ping"),
        (Protocol::Http11, "https://127.0.0.1:9/ping"),
    ] {
        let e = over(protocol, closed(url.into(), 1, 1))
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("https:// is for"), "{e}");
    }
}
