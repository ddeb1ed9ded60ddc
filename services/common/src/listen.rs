//! Listen-address check for services that bind with SO_REUSEPORT (monoio, may).
//!
//! SO_REUSEPORT lets a second server bind a port a stale server still holds, and traffic then
//! splits silently between them. Binding once *without* SO_REUSEPORT fails if anyone holds the
//! port, and resolves port 0 to a concrete free port that all per-core listeners can share.

use std::io;
use std::net::{SocketAddr, TcpListener};

/// Fails with `AddrInUse` if `addr` is taken; returns the concrete address (port 0 resolved).
pub fn probe_listen(addr: SocketAddr) -> io::Result<SocketAddr> {
    let probe = TcpListener::bind(addr)?;
    probe.local_addr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_port_zero_and_detects_a_taken_port() {
        let a = probe_listen("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(a.port(), 0);
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = probe_listen(held.local_addr().unwrap()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }
}
