//! The suite's TLS, one definition: what a service serving TLS accepts (TLS 1.3 only, so an
//! AEAD suite; ALPN offering exactly the protocols it serves over TLS), and — behind the
//! `generate` feature — the test certificate: an RSA-2048 key and a self-signed certificate
//! for `localhost` and 127.0.0.1, made when a run or a test starts and never committed.
//! RSA-2048 as HttpArena requires: an ECDSA key makes handshakes ~25× cheaper, so the key
//! type is recorded with every TLS cell ([`KEY_TYPE`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

pub use rustls;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The test certificate's key type, recorded with every TLS cell.
pub const KEY_TYPE: &str = "RSA-2048";

/// The one crypto provider: ring (aws-lc-rs, rustls' default, would add a C build to every
/// CI run; ring's lack of post-quantum key exchange is what rustls deprecates it for). Its
/// key exchange groups in rustls' order, secp384r1 first: what a handshake settled on is
/// recorded with every TLS cell.
#[allow(deprecated)]
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// What a service offers in ALPN when serving `protocol` over TLS: "h2+tls" serves h2 and,
/// on the same port, HTTP/1.1 (the runner's readiness probe and checks speak it);
/// "http/1.1+tls" serves HTTP/1.1 alone. None: not a TLS protocol.
pub fn alpn(protocol: &str) -> Option<Vec<Vec<u8>>> {
    match protocol {
        "h2+tls" => Some(vec![b"h2".to_vec(), b"http/1.1".to_vec()]),
        "http/1.1+tls" => Some(vec![b"http/1.1".to_vec()]),
        _ => None,
    }
}

/// Why a service cannot serve TLS: its certificate or key did not load.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// A service's server configuration for `protocol` ("h2+tls" or "http/1.1+tls"): TLS 1.3
/// only (every TLS 1.3 suite is an AEAD; TLS 1.2 and older are refused in the handshake), the
/// certificate chain and private key read from PEM files, ALPN per [`alpn`] (a client that
/// offers none of those gets no protocol, never one it did not offer).
pub fn server_config(protocol: &str, cert: &Path, key: &Path) -> Result<ServerConfig, Error> {
    let alpn = alpn(protocol).ok_or_else(|| Error(format!("{protocol} is not served over TLS")))?;
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| Error(format!("--tls-cert {}: {e}", cert.display())))?;
    if chain.is_empty() {
        return Err(Error(format!(
            "--tls-cert {}: no certificate in it",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error(format!("--tls-key {}: {e}", key.display())))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| Error(format!("certificate and key: {e}")))?;
    config.alpn_protocols = alpn;
    Ok(config)
}

/// Refuses, while the certificate is chosen, a client whose ALPN offers nothing `config`
/// serves: rustls then answers the ClientHello with an alert (`access_denied`, its answer when
/// no certificate is chosen) as the one record it has to send. Without this, rustls settles ALPN after queueing its ServerHello, so
/// the `no_application_protocol` alert comes second — and an adaptor that writes only the
/// first queued record of a failed handshake before dropping the connection (monoio-rustls
/// 0.4, compio-tls 0.10) sends the ServerHello and a close, no alert. A client offering no
/// ALPN at all is served as before.
pub fn refuse_unserved_alpn_early(config: &mut ServerConfig) {
    config.cert_resolver = Arc::new(AlpnFirst {
        served: config.alpn_protocols.clone(),
        inner: Arc::clone(&config.cert_resolver),
    });
}

/// A certificate resolver that gives none to a client whose ALPN offers nothing of `served`.
#[derive(Debug)]
struct AlpnFirst {
    served: Vec<Vec<u8>>,
    inner: Arc<dyn ResolvesServerCert>,
}

impl ResolvesServerCert for AlpnFirst {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(mut offered) = hello.alpn()
            && !offered.any(|p| self.served.iter().any(|s| s == p))
        {
            return None;
        }
        self.inner.resolve(hello)
    }
}

#[cfg(feature = "generate")]
mod generate;
#[cfg(feature = "generate")]
pub use generate::TestCert;
