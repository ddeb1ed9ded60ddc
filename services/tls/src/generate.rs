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
}
