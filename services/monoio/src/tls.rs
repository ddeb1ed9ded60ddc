//! `--protocol http/1.1+tls`: ping-tls' server configuration, with one change for
//! monoio-rustls. When a handshake fails, monoio-rustls (0.4) writes only the first record
//! rustls has queued before it drops the connection. rustls settles ALPN after it has queued
//! its ServerHello, so a client offering no protocol we serve would get the ServerHello and a
//! close instead of the `no_application_protocol` alert. Refusing such a client while the
//! certificate is chosen — before anything is queued — makes the alert (`handshake_failure`)
//! the one record, which monoio-rustls does write.

use std::sync::Arc;

use ping_tls::rustls::ServerConfig;
use ping_tls::rustls::server::{ClientHello, ResolvesServerCert};
use ping_tls::rustls::sign::CertifiedKey;

/// ping-tls' configuration for `protocol`, refusing in the ClientHello a client that offers
/// ALPN protocols none of which we serve.
pub fn server_config(
    protocol: &str,
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Result<ServerConfig, ping_tls::Error> {
    let mut config = ping_tls::server_config(protocol, cert, key)?;
    config.cert_resolver = Arc::new(AlpnFirst {
        served: config.alpn_protocols.clone(),
        inner: Arc::clone(&config.cert_resolver),
    });
    Ok(config)
}

/// A certificate resolver that gives none (so rustls refuses the handshake with an alert)
/// to a client whose ALPN offers nothing of `served`.
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
