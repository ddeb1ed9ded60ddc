//! Parse and resolve the target URL (`http://host[:port]/path?query`, or `https://` for the
//! TLS protocols); any other scheme is rejected up front with a clear message.

use std::net::{SocketAddr, ToSocketAddrs};

use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum UrlError {
    #[error("URL `{0}` has no scheme; expected http://host[:port]/path")]
    NoScheme(String),
    #[error("unsupported scheme `{0}`: http:// or https://")]
    Scheme(String),
    #[error("URL `{0}` has no host")]
    NoHost(String),
    #[error("invalid port in URL `{0}`")]
    Port(String),
    #[error("cannot resolve `{0}`: {1}")]
    Resolve(String, String),
}

/// A resolved target.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    /// Value of the `Host` header (`host` or `host:port` as written).
    pub host_header: String,
    /// Path and query, always starting with `/`.
    pub path: String,
    /// The host as written (TLS: the server name sent and checked).
    pub host: String,
}

/// Parse without resolving: `(host, port, host_header, path, https)`.
pub fn split(url: &str) -> Result<(String, u16, String, String, bool), UrlError> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(UrlError::NoScheme(url.to_string()));
    };
    let https = scheme.eq_ignore_ascii_case("https");
    if !https && !scheme.eq_ignore_ascii_case("http") {
        return Err(UrlError::Scheme(scheme.to_string()));
    }
    let default_port = if https { 443 } else { 80 };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(UrlError::NoHost(url.to_string()));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else {
            return Err(UrlError::NoHost(url.to_string()));
        };
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| UrlError::Port(url.to_string()))?,
            None if after.is_empty() => default_port,
            None => return Err(UrlError::Port(url.to_string())),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (
                h.to_string(),
                p.parse().map_err(|_| UrlError::Port(url.to_string()))?,
            ),
            None => (authority.to_string(), default_port),
        }
    };
    if host.is_empty() {
        return Err(UrlError::NoHost(url.to_string()));
    }
    if port == 0 {
        return Err(UrlError::Port(url.to_string()));
    }
    Ok((host, port, authority.to_string(), path, https))
}

/// Parse and resolve (first address wins).
pub fn resolve(url: &str) -> Result<Target, UrlError> {
    let (host, port, host_header, path, _) = split(url)?;
    let addr = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| UrlError::Resolve(host.clone(), e.to_string()))?
        .next()
        .ok_or_else(|| UrlError::Resolve(host.clone(), "no addresses".into()))?;
    Ok(Target {
        addr,
        host_header,
        path,
        host,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let (h, p, hh, path, https) = split("http://127.0.0.1:8080/ping?x=1").unwrap();
        assert!(!https);
        assert_eq!(
            (h.as_str(), p, hh.as_str(), path.as_str()),
            ("127.0.0.1", 8080, "127.0.0.1:8080", "/ping?x=1")
        );
        let (h, p, _, path, _) = split("http://[::1]:9/").unwrap();
        assert_eq!((h.as_str(), p, path.as_str()), ("::1", 9, "/"));
        assert_eq!(split("http://localhost").unwrap().3, "/");
        assert_eq!(split("http://h?q").unwrap().3, "/?q");
    }

    #[test]
    fn rejects_bad_urls() {
        assert!(matches!(split("ftp://x/"), Err(UrlError::Scheme(_))));
        assert_eq!(split("https://localhost/ping").unwrap().1, 443);
        assert!(split("HTTPS://localhost:8443/").unwrap().4);
        assert!(matches!(split("localhost:80"), Err(UrlError::NoScheme(_))));
        assert!(matches!(split("http:///x"), Err(UrlError::NoHost(_))));
        assert!(matches!(split("http://h:abc/"), Err(UrlError::Port(_))));
        assert!(matches!(split("http://h:0/"), Err(UrlError::Port(_))));
    }
}
