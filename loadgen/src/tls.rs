//! TLS for `http/1.1+tls` and `h2+tls`: one client configuration per run (TLS 1.3, ring,
//! ALPN of the one protocol asked for) and the byte pump between a connection's rustls
//! session and its non-blocking socket. rustls is sans-I/O: records are read with `read(2)`
//! and written with `send(2)` on the worker's own sockets, so its epoll loop is unchanged.
//!
//! Like h2load and wrk, loadgen does not check the server's certificate chain (a benchmark
//! trusts the server it was pointed at), but it does verify the handshake's signature, so a
//! handshake costs the client what a real one does.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme};

use crate::report::TlsSession;
use crate::spec::Protocol;
use crate::sys::socket;

/// The run's TLS client: its configuration and the server name sent (SNI).
pub struct Client {
    config: Arc<ClientConfig>,
    verifier: Arc<SignatureOnly>,
    name: ServerName<'static>,
    alpn: &'static [u8],
}

impl Client {
    /// For `protocol` to `host` (the URL's); None for a cleartext protocol.
    pub fn new(protocol: Protocol, host: &str) -> Result<Option<Client>, String> {
        let Some(alpn) = protocol.alpn() else {
            return Ok(None);
        };
        #[allow(deprecated)] // ring: see ping-tls; no post-quantum group is wanted here
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = Arc::new(SignatureOnly {
            provider: provider.clone(),
            key: OnceLock::new(),
        });
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![alpn.to_vec()];
        // One full handshake per connection: a reconnect resuming a session would measure
        // something else than the set-up reported.
        config.resumption = rustls::client::Resumption::disabled();
        let name = ServerName::try_from(host.trim_matches(['[', ']']).to_string())
            .map_err(|e| format!("TLS server name `{host}`: {e}"))?;
        Ok(Some(Client {
            config: Arc::new(config),
            verifier,
            name,
            alpn,
        }))
    }

    /// A fresh session for a new connection.
    pub fn session(&self) -> io::Result<ClientConnection> {
        ClientConnection::new(self.config.clone(), self.name.clone()).map_err(io::Error::other)
    }

    /// What a finished handshake settled on; an error if ALPN did not pick the protocol asked.
    pub fn negotiated(&self, s: &ClientConnection) -> Result<TlsSession, String> {
        let alpn = s.alpn_protocol().unwrap_or_default();
        if alpn != self.alpn {
            return Err(format!(
                "ALPN: asked for {}, the server chose {}",
                String::from_utf8_lossy(self.alpn),
                if alpn.is_empty() {
                    "none".into()
                } else {
                    String::from_utf8_lossy(alpn)
                }
            ));
        }
        let name = |d: Option<String>| d.unwrap_or_else(|| "unknown".into());
        Ok(TlsSession {
            version: name(
                s.protocol_version()
                    .and_then(|v| v.as_str().map(str::to_string)),
            ),
            suite: name(
                s.negotiated_cipher_suite()
                    .and_then(|c| c.suite().as_str().map(str::to_string)),
            ),
            key_exchange: name(
                s.negotiated_key_exchange_group()
                    .and_then(|g| g.name().as_str().map(str::to_string)),
            ),
            alpn: String::from_utf8_lossy(alpn).into_owned(),
            server_key: self.verifier.key.get().cloned().unwrap_or_default(),
            chain_verified: false,
        })
    }
}

/// Checks the handshake's signatures, not the certificate chain (see the module's note), and
/// notes the server's key type from the first: the cost of a handshake hangs on it.
#[derive(Debug)]
struct SignatureOnly {
    provider: Arc<CryptoProvider>,
    key: OnceLock<String>,
}

/// The signing key's type as its signature shows it: an RSA signature is as long as the
/// modulus, so "RSA-2048"; otherwise the scheme's name.
fn key_type(dss: &DigitallySignedStruct) -> String {
    let scheme = format!("{:?}", dss.scheme);
    if scheme.starts_with("RSA") {
        format!("RSA-{}", dss.signature().len() * 8)
    } else {
        scheme
    }
}

impl ServerCertVerifier for SignatureOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.key.get_or_init(|| key_type(dss));
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A socket as rustls' record reader and writer: `read(2)` and `send(2)`, counted like every
/// other syscall of the worker.
pub struct Fd(pub RawFd);

impl io::Read for Fd {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        socket::read(self.0, buf)
    }
}

impl io::Write for Fd {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        socket::send(self.0, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
