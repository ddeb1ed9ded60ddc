//! TLS for a service serving it (`--protocol http/1.1+tls` or `h2+tls`): the test certificate
//! it is started with — an RSA-2048 key and certificate (`ping-tls`) made once per process in
//! a directory of its own under the system's temporary directory, never under a run's
//! results, and removed when the command ends ([`remove`]) — and the runner's TLS client for
//! readiness and verification, which trusts that certificate alone and speaks HTTP/1.1.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// The certificate and key files services are given.
pub struct Files {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Clients trusting the certificate alone, asking ALPN for HTTP/1.1 and for h2.
    http11: Arc<ClientConfig>,
    h2: Arc<ClientConfig>,
}

static FILES: OnceLock<Result<Files, String>> = OnceLock::new();
static MADE: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The process's test certificate, made on first use.
pub fn files() -> Result<&'static Files, String> {
    FILES.get_or_init(make).as_ref().map_err(Clone::clone)
}

fn make() -> Result<Files, String> {
    let dir = std::env::temp_dir().join(format!("pingmatrix-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("TLS test certificate: {e}"))?;
    *MADE.lock().unwrap_or_else(|p| p.into_inner()) = Some(dir.clone());
    let made = ping_tls::TestCert::rsa2048().map_err(|e| format!("TLS test certificate: {e}"))?;
    let (cert, key) = made
        .write(&dir)
        .map_err(|e| format!("TLS test certificate in {}: {e}", dir.display()))?;
    let client = |alpn: &[u8]| {
        made.client_config(&[&rustls::version::TLS13], &[alpn])
            .map(Arc::new)
            .map_err(|e| format!("TLS: {e}"))
    };
    Ok(Files {
        cert,
        key,
        http11: client(b"http/1.1")?,
        h2: client(b"h2")?,
    })
}

/// Removes the certificate's directory, if one was made (at the end of a command).
pub fn remove() {
    if let Some(dir) = MADE.lock().unwrap_or_else(|p| p.into_inner()).take() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The arguments a TLS service is started with beside `--protocol`.
pub fn service_args() -> Result<[String; 4], String> {
    let f = files()?;
    Ok([
        "--tls-cert".into(),
        f.cert.display().to_string(),
        "--tls-key".into(),
        f.key.display().to_string(),
    ])
}

/// A connection to a service: cleartext, or TLS with the handshake done.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    /// Over `tls`, completes the handshake on `s` (within its timeouts) and checks that
    /// ALPN settled on HTTP/1.1.
    pub fn over(s: TcpStream, tls: bool) -> Result<Stream, String> {
        Self::alpn(s, tls.then_some(b"http/1.1"))
    }

    /// With `alpn` ("http/1.1" or "h2"), over TLS: the handshake done on `s` and ALPN
    /// checked to have settled on it; without, `s` as it is.
    pub fn alpn(s: TcpStream, alpn: Option<&'static [u8]>) -> Result<Stream, String> {
        let Some(alpn) = alpn else {
            return Ok(Stream::Plain(s));
        };
        let f = files()?;
        let config = if alpn == b"h2" { &f.h2 } else { &f.http11 };
        let ip = s.peer_addr().map_err(|e| e.to_string())?.ip();
        let mut c = ClientConnection::new(config.clone(), ServerName::IpAddress(ip.into()))
            .map_err(|e| format!("TLS: {e}"))?;
        let mut s = s;
        while c.is_handshaking() {
            c.complete_io(&mut s)
                .map_err(|e| format!("TLS handshake: {e}"))?;
        }
        if c.alpn_protocol() != Some(alpn) {
            return Err(format!(
                "TLS: ALPN did not settle on {}",
                String::from_utf8_lossy(alpn)
            ));
        }
        Ok(Stream::Tls(Box::new(StreamOwned::new(c, s))))
    }

    pub fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}
