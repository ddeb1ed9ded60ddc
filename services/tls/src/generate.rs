//! The test certificate, made fresh: an RSA-2048 key (the `rsa` crate: ring signs with RSA
//! keys but cannot make one) and a self-signed certificate for `localhost` and 127.0.0.1.

use std::fs;
use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{CertificateParams, KeyPair, PKCS_RSA_SHA256, SanType};
use rsa::RsaPrivateKey;
use rsa::pkcs8::{EncodePrivateKey, LineEnding};
use rsa::rand_core::OsRng;

/// A certificate and its private key, both PEM.
pub struct TestCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCert {
    /// A new RSA-2048 key and a certificate for `localhost` and 127.0.0.1 signed with it.
    pub fn rsa2048() -> Result<TestCert, String> {
        let key = RsaPrivateKey::new(&mut OsRng, 2048).map_err(|e| format!("RSA key: {e}"))?;
        let key_pem = key
            .to_pkcs8_pem(LineEnding::LF)
            .map_err(|e| format!("RSA key as PKCS#8: {e}"))?
            .to_string();
        let pair = KeyPair::from_pkcs8_pem_and_sign_algo(&key_pem, &PKCS_RSA_SHA256)
            .map_err(|e| format!("RSA key for signing: {e}"))?;
        let mut params = CertificateParams::new(vec!["localhost".to_string()])
            .map_err(|e| format!("certificate: {e}"))?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        let cert = params
            .self_signed(&pair)
            .map_err(|e| format!("certificate: {e}"))?;
        Ok(TestCert {
            cert_pem: cert.pem(),
            key_pem,
        })
    }

    /// A client that trusts this certificate alone, on the suite's provider, offering
    /// `versions` and `alpn` (the runner's probe, the conformance checks).
    pub fn client_config(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
        alpn: &[&[u8]],
    ) -> Result<rustls::ClientConfig, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        let cert = CertificateDer::from_pem_slice(self.cert_pem.as_bytes())
            .map_err(|e| format!("test certificate: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("test certificate as a root: {e}"))?;
        let mut config = rustls::ClientConfig::builder_with_provider(crate::provider())
            .with_protocol_versions(versions)
            .map_err(|e| format!("client versions: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }

    /// Writes `cert.pem` and `key.pem` (readable by this user alone) into `dir`; returns
    /// their paths.
    pub fn write(&self, dir: &Path) -> io::Result<(PathBuf, PathBuf)> {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        fs::write(&cert, &self.cert_pem)?;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&key)?;
        io::Write::write_all(&mut f, self.key_pem.as_bytes())?;
        Ok((cert, key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_certificate_loads_as_a_tls13_server_config() {
        let dir = std::env::temp_dir().join(format!("ping-tls-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (cert, key) = TestCert::rsa2048().unwrap().write(&dir).unwrap();
        let c = crate::server_config("h2+tls", &cert, &key).unwrap();
        assert_eq!(c.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
        assert!(crate::server_config("h2c", &cert, &key).is_err());
        let missing = crate::server_config("http/1.1+tls", &dir.join("none.pem"), &key);
        assert!(missing.unwrap_err().to_string().contains("none.pem"));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The server's first record to a ClientHello offering only `offer` in ALPN.
    fn first_record(config: rustls::ServerConfig, offer: &[u8]) -> Vec<u8> {
        use std::sync::Arc;

        use rustls::pki_types::ServerName;
        // Nothing is verified: the server's first record answers the ClientHello alone.
        let roots = rustls::RootCertStore::empty();
        let mut client_config = rustls::ClientConfig::builder_with_provider(crate::provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        client_config.alpn_protocols = vec![offer.to_vec()];
        let name = ServerName::try_from("localhost").unwrap();
        let mut client = rustls::ClientConnection::new(Arc::new(client_config), name).unwrap();
        let mut hello = Vec::new();
        client.write_tls(&mut hello).unwrap();
        let mut server = rustls::ServerConnection::new(Arc::new(config)).unwrap();
        server.read_tls(&mut hello.as_slice()).unwrap();
        let _ = server.process_new_packets();
        let mut out = Vec::new();
        server.write_tls(&mut out).unwrap();
        let len = u16::from_be_bytes([out[3], out[4]]) as usize;
        out.truncate(5 + len);
        out
    }

    #[test]
    fn an_unserved_alpn_is_refused_before_the_server_hello() {
        let dir = std::env::temp_dir().join(format!("ping-tls-alpn-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (cert, key) = TestCert::rsa2048().unwrap().write(&dir).unwrap();
        let config = || crate::server_config("http/1.1+tls", &cert, &key).unwrap();
        // rustls alone: the ServerHello (handshake type 2) first, its alert after it.
        let plain = first_record(config(), b"h2");
        assert_eq!((plain[0], plain[5]), (22, 2));
        // Refused early: an alert (content type 21), access_denied (49: rustls' answer when no
        // certificate is chosen), alone.
        let mut early = config();
        crate::refuse_unserved_alpn_early(&mut early);
        assert_eq!(first_record(early, b"h2"), [21, 3, 3, 0, 2, 2, 49]);
        // A client offering what is served is not refused.
        let mut early = config();
        crate::refuse_unserved_alpn_early(&mut early);
        let served = first_record(early, b"http/1.1");
        assert_eq!((served[0], served[5]), (22, 2));
        fs::remove_dir_all(&dir).unwrap();
    }
}
