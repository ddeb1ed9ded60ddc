//! HTTP/1.1 and HTTP/2 over TLS (`--protocol http/1.1+tls`, `--protocol h2+tls`), checked
//! with a rustls client (ring) and, for what rustls will not send, raw bytes: a service serves
//! a TLS protocol exactly when services/services.toml lists it, on TLS 1.3 alone with an AEAD
//! suite, selecting in ALPN only what it serves; a service that does not list one refuses it
//! with exit 2 before it binds.
//!
//! The certificate is made once per test process (`ping-tls`' RSA-2048 test certificate,
//! written to a temporary directory); clients trust it alone and name the server "localhost".
//! Each check's core is a function over an address (`*_at`), so this module's tests can run it
//! against deliberately broken servers and see it fail.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ping_tls::rustls;
use rustls::pki_types::ServerName;
use rustls::{
    AlertDescription, CipherSuite, ClientConfig, ClientConnection, ProtocolVersion, StreamOwned,
    SupportedProtocolVersion,
};

use super::h2c::{self, Conn};
use crate::client::read_some;
use crate::service::Service;

/// The TLS protocols of services/services.toml.
const TLS_PROTOCOLS: &[&str] = &["http/1.1+tls", "h2+tls"];
/// How long a handshake or an answer may take (generous: the machine is shared).
const WAIT: Duration = Duration::from_secs(5);

/// The test certificate of this process: its PEM files and the certificate itself.
pub struct TestFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub made: ping_tls::TestCert,
}

/// The directory of this process' test certificate.
fn cert_dir() -> PathBuf {
    std::env::temp_dir().join(format!("ping-conformance-tls-{}", std::process::id()))
}

/// Removes [`cert_dir`] when the test process exits.
extern "C" fn remove_cert_dir() {
    let _ = std::fs::remove_dir_all(cert_dir());
}

/// Made on first use, once per test process, in a directory of its own under the temporary
/// directory (removed when the process exits).
pub fn test_cert() -> &'static TestFiles {
    static CERT: OnceLock<TestFiles> = OnceLock::new();
    CERT.get_or_init(|| {
        let made = ping_tls::TestCert::rsa2048().unwrap_or_else(|e| panic!("test cert: {e}"));
        let dir = cert_dir();
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        // SAFETY: registers a plain function with no preconditions, run once at exit.
        unsafe { libc::atexit(remove_cert_dir) };
        let (cert, key) = made
            .write(&dir)
            .unwrap_or_else(|e| panic!("writing the test cert: {e}"));
        TestFiles { cert, key, made }
    })
}

/// The TLS protocols `bin` declares.
fn declared(bin: &str) -> Vec<&'static str> {
    TLS_PROTOCOLS
        .iter()
        .copied()
        .filter(|p| ping_catalogue::find(bin).is_some_and(|s| s.serves(p)))
        .collect()
}

/// `bin` started with `--protocol <protocol>` and the test certificate.
fn start(bin: &str, protocol: &str) -> Service {
    let c = test_cert();
    let (cert, key) = (c.cert.to_string_lossy(), c.key.to_string_lossy());
    Service::start(
        bin,
        &[
            "--protocol",
            protocol,
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
        ],
    )
}

/// Runs `check` on `bin` started with each TLS protocol it declares; panics with the first
/// failure.
fn on_each_declared(bin: &str, check: impl Fn(SocketAddr, &str) -> Result<(), String>) {
    for protocol in declared(bin) {
        let svc = start(bin, protocol);
        if let Err(e) = check(svc.addr(), protocol) {
            panic!("{bin} --protocol {protocol}: {e}");
        }
    }
}

/// How a handshake ended.
pub enum Handshake {
    Done(Box<StreamOwned<ClientConnection, TcpStream>>),
    /// The server sent this alert.
    Alert(AlertDescription),
    /// The server closed (or reset) the connection.
    Closed,
    /// Anything else: our client refused what came, or nothing came in time.
    Failed(String),
}

/// A client that trusts the test certificate alone, offers `versions` and `alpn`.
pub fn client_config(
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> ClientConfig {
    test_cert()
        .made
        .client_config(versions, alpn)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A TLS handshake with the server at `addr` for "localhost", offering `versions` and `alpn`.
pub fn handshake(
    addr: SocketAddr,
    versions: &[&'static SupportedProtocolVersion],
    alpn: &[&[u8]],
) -> Handshake {
    let config = Arc::new(client_config(versions, alpn));
    let sock = match TcpStream::connect_timeout(&addr, WAIT) {
        Ok(s) => s,
        Err(e) => return Handshake::Failed(format!("connect {addr}: {e}")),
    };
    let _ = sock.set_read_timeout(Some(WAIT));
    let name = ServerName::try_from("localhost").expect("a DNS name");
    let conn = match ClientConnection::new(config, name) {
        Ok(c) => c,
        Err(e) => return Handshake::Failed(format!("client: {e}")),
    };
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        if let Err(e) = s.conn.complete_io(&mut s.sock) {
            let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
            return match (tls, e.kind()) {
                (Some(rustls::Error::AlertReceived(a)), _) => Handshake::Alert(*a),
                (None, ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset) => Handshake::Closed,
                (Some(t), _) => Handshake::Failed(format!("our client refused the handshake: {t}")),
                (None, ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    Handshake::Failed(format!("no handshake within {WAIT:?}"))
                }
                (None, _) => Handshake::Failed(format!("handshake: {e}")),
            };
        }
    }
    Handshake::Done(Box::new(s))
}

/// A handshake offering TLS 1.3 and ALPN `alpn` that must complete.
fn connect(
    addr: SocketAddr,
    alpn: &[u8],
) -> Result<StreamOwned<ClientConnection, TcpStream>, String> {
    match handshake(addr, &[&rustls::version::TLS13], &[alpn]) {
        Handshake::Done(s) => Ok(*s),
        Handshake::Alert(a) => Err(format!("the handshake got the alert {a:?}")),
        Handshake::Closed => Err("the server closed during the handshake".into()),
        Handshake::Failed(e) => Err(e),
    }
}

fn alpn_name(s: &StreamOwned<ClientConnection, TcpStream>) -> Option<String> {
    s.conn
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned())
}

/// Served where declared: `GET /ping` over TLS with ALPN http/1.1 (on h2+tls' port too) is
/// answered 200 "pong"; a TLS protocol without both files, a file that does not load, or the
/// files with a cleartext protocol: exit 2. A TLS protocol not declared: exit 2, "does not
/// serve <protocol>", nothing on stdout.
pub fn tls_as_declared(bin: &str) {
    let declared = declared(bin);
    let c = test_cert();
    let (cert, key) = (c.cert.to_string_lossy(), c.key.to_string_lossy());
    let missing = c.cert.with_file_name("missing.pem");
    let missing = missing.to_string_lossy();
    for protocol in TLS_PROTOCOLS {
        let refused = |args: &[&str], says: &str| {
            let out = Command::new(crate::binary::path(bin))
                .args(["--listen", "127.0.0.1:0", "--protocol", protocol])
                .args(args)
                .stdin(Stdio::null())
                .output()
                .expect("run");
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{bin} --protocol {protocol} {args:?}: {err}"
            );
            assert!(
                out.stdout.is_empty(),
                "{bin} {args:?} wrote a start-up line"
            );
            assert!(
                err.contains(says),
                "{bin} {args:?}: unclear message {err:?}"
            );
        };
        if !declared.contains(protocol) {
            refused(
                &["--tls-cert", &cert, "--tls-key", &key],
                &format!("does not serve {protocol}"),
            );
            continue;
        }
        refused(&[], "needs --tls-cert and --tls-key");
        refused(&["--tls-cert", &cert], "needs --tls-key");
        refused(&["--tls-cert", &missing, "--tls-key", &key], &missing);
        refused(&["--tls-cert", &key, "--tls-key", &key], "no certificate");
        let svc = start(bin, protocol);
        if let Err(e) = tls_ping_at(svc.addr()) {
            panic!("{bin} --protocol {protocol}: {e}");
        }
    }
    if let Some(protocol) = declared.first() {
        // The TLS files with a cleartext protocol are refused too.
        let out = Command::new(crate::binary::path(bin))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--tls-cert",
                &cert,
                "--tls-key",
                &key,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bin} (declares {protocol}) --tls-cert with --protocol http/1.1"
        );
    }
}

/// [`tls_as_declared`]'s core: `GET /ping` over TLS 1.3 with ALPN http/1.1 is answered 200
/// "pong", and ALPN chose http/1.1.
pub fn tls_ping_at(addr: SocketAddr) -> Result<(), String> {
    let mut s = connect(addr, b"http/1.1")?;
    if s.conn.alpn_protocol() != Some(b"http/1.1") {
        return Err(format!("ALPN chose {:?}, not http/1.1", alpn_name(&s)));
    }
    s.write_all(b"GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let (head, body) = read_response(&mut s)?;
    if !head.starts_with("HTTP/1.1 200 ") || body != b"pong" {
        return Err(format!(
            "GET /ping answered {:?} with body {:?}",
            head.lines().next().unwrap_or(""),
            String::from_utf8_lossy(&body)
        ));
    }
    Ok(())
}

/// One HTTP/1.1 response with a Content-Length: (head, body).
fn read_response(s: &mut impl Read) -> Result<(String, Vec<u8>), String> {
    let deadline = Instant::now() + WAIT;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).into_owned();
            let len = head
                .lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
                .and_then(|(_, v)| v.trim().parse::<usize>().ok())
                .ok_or_else(|| format!("no Content-Length in {head:?}"))?;
            if got.len() >= end + 4 + len {
                return Ok((head, got[end + 4..end + 4 + len].to_vec()));
            }
        }
        if Instant::now() > deadline {
            return Err(format!("no complete response within {WAIT:?}: {got:?}"));
        }
        match read_some(s, &mut buf) {
            Ok(0) => return Err(format!("closed after {} bytes", got.len())),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

/// The handshake negotiates TLS 1.3 and an AEAD suite.
pub fn tls13_aead(bin: &str) {
    on_each_declared(bin, |addr, _| tls13_aead_at(addr));
}

/// [`tls13_aead`]'s core: a client offering TLS 1.2 and 1.3 gets 1.3, with an AEAD suite.
pub fn tls13_aead_at(addr: SocketAddr) -> Result<(), String> {
    let both = [&rustls::version::TLS13, &rustls::version::TLS12];
    let s = match handshake(addr, &both, &[b"http/1.1"]) {
        Handshake::Done(s) => s,
        Handshake::Alert(a) => return Err(format!("the handshake got the alert {a:?}")),
        Handshake::Closed => return Err("the server closed during the handshake".into()),
        Handshake::Failed(e) => return Err(e),
    };
    let version = s.conn.protocol_version();
    let suite = s.conn.negotiated_cipher_suite().map(|c| c.suite());
    let aead = matches!(
        suite,
        Some(
            CipherSuite::TLS13_AES_128_GCM_SHA256
                | CipherSuite::TLS13_AES_256_GCM_SHA384
                | CipherSuite::TLS13_CHACHA20_POLY1305_SHA256
        )
    );
    if version != Some(ProtocolVersion::TLSv1_3) || !aead {
        return Err(format!(
            "negotiated {version:?} with {suite:?}: want TLSv1_3 with an AEAD suite"
        ));
    }
    Ok(())
}

/// A client offering only protocols the service does not serve gets no ALPN protocol or an
/// alert, never one it did not offer (nor one the service does not serve).
pub fn tls_alpn_only_served(bin: &str) {
    on_each_declared(bin, tls_alpn_only_served_at);
}

/// [`tls_alpn_only_served`]'s core, for a server serving `protocol`: offering only "h3", only
/// "spdy/3.1", and (http/1.1+tls) only "h2".
pub fn tls_alpn_only_served_at(addr: SocketAddr, protocol: &str) -> Result<(), String> {
    let mut offers: Vec<&[u8]> = vec![b"h3", b"spdy/3.1"];
    if protocol == "http/1.1+tls" {
        offers.push(b"h2");
    }
    for offer in offers {
        let what = String::from_utf8_lossy(offer);
        match handshake(addr, &[&rustls::version::TLS13], &[offer]) {
            Handshake::Done(s) => {
                if let Some(chosen) = alpn_name(&s) {
                    return Err(format!("offered only {what:?}, ALPN chose {chosen:?}"));
                }
            }
            Handshake::Alert(_) => {}
            Handshake::Closed => {
                return Err(format!(
                    "offered only {what:?}: closed without an alert or a handshake"
                ));
            }
            Handshake::Failed(e) => return Err(format!("offered only {what:?}: {e}")),
        }
    }
    Ok(())
}

/// A client limited to TLS 1.2 fails the handshake.
pub fn tls12_refused(bin: &str) {
    on_each_declared(bin, |addr, _| tls12_refused_at(addr));
}

/// [`tls12_refused`]'s core: a TLS 1.2-only client gets an alert or a close.
pub fn tls12_refused_at(addr: SocketAddr) -> Result<(), String> {
    match handshake(addr, &[&rustls::version::TLS12], &[b"http/1.1"]) {
        Handshake::Done(s) => Err(format!(
            "a TLS 1.2 handshake completed ({:?}, {:?})",
            s.conn.protocol_version(),
            s.conn.negotiated_cipher_suite().map(|c| c.suite())
        )),
        Handshake::Alert(_) | Handshake::Closed => Ok(()),
        Handshake::Failed(e) => Err(format!("neither an alert nor a close: {e}")),
    }
}

/// A legacy ClientHello (TLS 1.0, no supported_versions, legacy suites only) is answered
/// with an alert or a close, never a ServerHello.
pub fn tls_legacy_refused(bin: &str) {
    on_each_declared(bin, |addr, _| tls_legacy_refused_at(addr));
}

/// A ClientHello as a TLS 1.0 client sends it: legacy_version 3.1, no extensions (so no
/// supported_versions), offering TLS_RSA_WITH_3DES_EDE_CBC_SHA and TLS_RSA_WITH_RC4_128_SHA.
fn legacy_client_hello() -> Vec<u8> {
    let mut body = vec![0x03, 0x01]; // legacy_version TLS 1.0
    body.extend((0..32u8).map(|i| i.wrapping_mul(37))); // random
    body.push(0); // session id: none
    body.extend_from_slice(&[0x00, 0x04, 0x00, 0x0a, 0x00, 0x05]); // two suites
    body.extend_from_slice(&[0x01, 0x00]); // compression: null
    let mut hs = vec![0x01]; // client_hello
    hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    hs.extend(body);
    let mut record = vec![0x16, 0x03, 0x01]; // handshake record, TLS 1.0
    record.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    record.extend(hs);
    record
}

/// [`tls_legacy_refused`]'s core: the first record back is an alert (content type 21), or
/// the connection closes; a ServerHello (handshake type 2) or anything else fails.
pub fn tls_legacy_refused_at(addr: SocketAddr) -> Result<(), String> {
    let mut s = TcpStream::connect_timeout(&addr, WAIT).map_err(|e| format!("connect: {e}"))?;
    s.write_all(&legacy_client_hello())
        .map_err(|e| format!("write: {e}"))?;
    let _ = s.set_read_timeout(Some(WAIT));
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while got.len() < 6 {
        match read_some(&mut s, &mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => return Err(format!("no alert and no close within {WAIT:?}: {e}")),
        }
    }
    match got.as_slice() {
        [] => Ok(()), // a close
        [21, ..] => Ok(()),
        [22, _, _, _, _, 2, ..] => Err(format!(
            "a legacy ClientHello was answered with a ServerHello: {:02x?}",
            &got[..got.len().min(16)]
        )),
        _ => Err(format!(
            "a legacy ClientHello was answered with neither an alert nor a close: {:02x?}",
            &got[..got.len().min(16)]
        )),
    }
}

impl Conn for StreamOwned<ClientConnection, TcpStream> {
    fn read_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.sock.set_read_timeout(Some(timeout))
    }
}

/// h2+tls: ALPN h2 negotiated; our preface and SETTINGS get SETTINGS back, and GET /ping on
/// stream 1 gets `:status 200` with the body "pong".
pub fn h2_tls_preface_and_settings(bin: &str) {
    if !declared(bin).contains(&"h2+tls") {
        return; // refused: `tls_as_declared`
    }
    let svc = start(bin, "h2+tls");
    if let Err(e) = h2_tls_preface_and_settings_at(svc.addr()) {
        panic!("{bin} --protocol h2+tls: {e}");
    }
}

/// [`h2_tls_preface_and_settings`]'s core.
pub fn h2_tls_preface_and_settings_at(addr: SocketAddr) -> Result<(), String> {
    let mut s = connect(addr, b"h2")?;
    if s.conn.alpn_protocol() != Some(b"h2") {
        return Err(format!("ALPN chose {:?}, not h2", alpn_name(&s)));
    }
    let mut out = h2c::PREFACE.to_vec();
    out.extend(h2c::frame(h2c::SETTINGS, 0, 0, &[]));
    s.write_all(&out)
        .map_err(|e| format!("write the preface: {e}"))?;
    let deadline = Instant::now() + WAIT;
    let first = h2c::read_frame(&mut s, deadline).ok_or("no frame after the preface")?;
    if (first.0, first.1 & 1, first.2) != (h2c::SETTINGS, 0, 0) || first.3.len() % 6 != 0 {
        return Err(format!(
            "first frame: type {} flags {} stream {} ({} bytes), not SETTINGS",
            first.0,
            first.1,
            first.2,
            first.3.len()
        ));
    }
    s.write_all(&h2c::frame(
        h2c::HEADERS,
        h2c::END_STREAM | h2c::END_HEADERS,
        1,
        &h2c::get_ping(),
    ))
    .map_err(|e| format!("write GET /ping: {e}"))?;
    let (ok, pong, reset) = h2c::pings_read(&mut s, 1, deadline)?;
    if (ok, pong, reset) != (1, 1, 0) {
        return Err(format!(
            "GET /ping on stream 1: {ok} :status 200, {pong} pong bodies, {reset} resets"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! Each check against deliberately broken in-process servers (it must fail there), and
    //! against a server serving as ping-tls configures it (it must pass there).

    use std::net::TcpListener;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::{ServerConfig, ServerConnection};

    use super::*;

    type ServerStream = StreamOwned<ServerConnection, TcpStream>;

    /// A rustls server with the test certificate, `versions` and `alpn`.
    fn server_config(
        versions: &[&'static SupportedProtocolVersion],
        alpn: &[&[u8]],
    ) -> ServerConfig {
        let c = test_cert();
        let chain = vec![CertificateDer::from_pem_slice(c.made.cert_pem.as_bytes()).unwrap()];
        let key = PrivateKeyDer::from_pem_slice(c.made.key_pem.as_bytes()).unwrap();
        let mut config = ServerConfig::builder_with_provider(ping_tls::provider())
            .with_protocol_versions(versions)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config
    }

    /// Serves `config` on 127.0.0.1:0 (a thread per connection), then `then` on each
    /// connection whose handshake completed.
    fn tls_server(config: ServerConfig, then: fn(ServerStream)) -> SocketAddr {
        let config = Arc::new(config);
        raw_server(move |sock| {
            let _ = sock.set_read_timeout(Some(WAIT));
            let Ok(conn) = ServerConnection::new(Arc::clone(&config)) else {
                return;
            };
            let mut s = StreamOwned::new(conn, sock);
            while s.conn.is_handshaking() {
                if s.conn.complete_io(&mut s.sock).is_err() {
                    return;
                }
            }
            then(s);
        })
    }

    /// Accepts on 127.0.0.1:0 and hands each connection to `serve` on a thread of its own.
    fn raw_server(serve: impl Fn(TcpStream) + Send + Sync + 'static) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let serve = Arc::new(serve);
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                let serve = Arc::clone(&serve);
                std::thread::spawn(move || serve(s));
            }
        });
        addr
    }

    /// Reads what comes, then writes `reply` and keeps the connection open a while.
    fn canned(reply: &'static [u8]) -> SocketAddr {
        raw_server(move |mut s| {
            let _ = s.read(&mut [0u8; 4096]);
            let _ = s.write_all(reply);
            std::thread::sleep(Duration::from_secs(8));
        })
    }

    /// Answers every HTTP/1.1 request head with 200 "pong".
    fn pong(mut s: ServerStream) {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = read_some(&mut s, &mut buf) {
            if n == 0 {
                return;
            }
            got.extend_from_slice(&buf[..n]);
            while let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                got.drain(..end + 4);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong");
            }
        }
    }

    /// A TLS server as ping-tls configures one for http/1.1+tls: every check passes.
    #[test]
    fn every_check_passes_against_ping_tls_policy() {
        let c = test_cert();
        let config = ping_tls::server_config("http/1.1+tls", &c.cert, &c.key).unwrap();
        let addr = tls_server(config, pong);
        assert_eq!(tls_ping_at(addr), Ok(()));
        assert_eq!(tls13_aead_at(addr), Ok(()));
        assert_eq!(tls_alpn_only_served_at(addr, "http/1.1+tls"), Ok(()));
        assert_eq!(tls12_refused_at(addr), Ok(()));
        assert_eq!(tls_legacy_refused_at(addr), Ok(()));
        // Not h2: ALPN h2 is refused with an alert, so the h2 check fails.
        let err = h2_tls_preface_and_settings_at(addr).unwrap_err();
        assert!(err.contains("NoApplicationProtocol"), "{err}");
    }

    #[test]
    fn tls12_refused_fails_against_a_server_allowing_tls12() {
        let both = [&rustls::version::TLS13, &rustls::version::TLS12];
        let addr = tls_server(server_config(&both, &[b"http/1.1"]), pong);
        let err = tls12_refused_at(addr).unwrap_err();
        assert!(err.contains("TLS 1.2 handshake completed"), "{err}");
    }

    #[test]
    fn tls13_aead_fails_against_a_tls12_server() {
        let addr = tls_server(
            server_config(&[&rustls::version::TLS12], &[b"http/1.1"]),
            pong,
        );
        let err = tls13_aead_at(addr).unwrap_err();
        assert!(err.contains("TLSv1_2"), "{err}");
    }

    #[test]
    fn alpn_only_served_fails_against_a_server_that_never_does_tls() {
        let addr = canned(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong");
        let err = tls_alpn_only_served_at(addr, "h2+tls").unwrap_err();
        assert!(err.contains("offered only \"h3\""), "{err}");
    }

    #[test]
    fn alpn_only_served_fails_when_http11_tls_selects_h2() {
        let config = server_config(&[&rustls::version::TLS13], &[b"h2", b"http/1.1"]);
        let addr = tls_server(config, pong);
        let err = tls_alpn_only_served_at(addr, "http/1.1+tls").unwrap_err();
        assert!(
            err.contains("offered only \"h2\", ALPN chose \"h2\""),
            "{err}"
        );
    }

    #[test]
    fn legacy_refused_fails_against_a_canned_server_hello() {
        // A ServerHello record (TLS 1.0, handshake type 2), cut short: what matters is its type.
        let addr = canned(&[
            0x16, 0x03, 0x01, 0x00, 0x2a, 0x02, 0x00, 0x00, 0x26, 0x03, 0x01,
        ]);
        let err = tls_legacy_refused_at(addr).unwrap_err();
        assert!(err.contains("ServerHello"), "{err}");
    }

    #[test]
    fn legacy_refused_fails_against_a_server_that_never_answers() {
        let addr = raw_server(|s| {
            std::thread::sleep(Duration::from_secs(8));
            drop(s);
        });
        let err = tls_legacy_refused_at(addr).unwrap_err();
        assert!(err.contains("no alert and no close"), "{err}");
    }

    #[test]
    fn h2_tls_fails_against_a_server_that_does_not_speak_h2() {
        let config = server_config(&[&rustls::version::TLS13], &[b"h2"]);
        let addr = tls_server(config, |mut s| {
            let _ = s.read(&mut [0u8; 4096]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            std::thread::sleep(Duration::from_secs(2));
        });
        // Read as a frame head, "HTTP/1.1 " announces a 4.7 MB frame that never comes.
        let err = h2_tls_preface_and_settings_at(addr).unwrap_err();
        assert!(err.contains("no frame after the preface"), "{err}");
    }

    #[test]
    fn tls_ping_fails_against_a_server_answering_500() {
        let config = server_config(&[&rustls::version::TLS13], &[b"http/1.1"]);
        let addr = tls_server(config, |mut s| {
            let _ = s.read(&mut [0u8; 4096]);
            let _ = s.write_all(b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\npong");
            std::thread::sleep(Duration::from_secs(2));
        });
        let err = tls_ping_at(addr).unwrap_err();
        assert!(err.contains("500 Oops"), "{err}");
    }

    #[test]
    fn the_legacy_hello_is_well_formed() {
        let h = legacy_client_hello();
        assert_eq!(h[0], 22);
        assert_eq!(u16::from_be_bytes([h[3], h[4]]) as usize, h.len() - 5);
        assert_eq!(h[5], 1);
        assert_eq!(
            u32::from_be_bytes([0, h[6], h[7], h[8]]) as usize,
            h.len() - 9
        );
    }
}
