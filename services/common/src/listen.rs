//! The listening socket, created the same way for every service (services/README.md,
//! "Listening socket"): what must be equal between services is decided here, once.
//!
//! - backlog [`LISTEN_BACKLOG`] (the kernel caps it at `net.core.somaxconn`);
//! - `SO_REUSEADDR` always, so a restarted service re-binds its port while connections of the
//!   previous run sit in TIME_WAIT or FIN_WAIT2;
//! - `SO_REUSEPORT` only for per-core listeners, after [`probe_listen`] has made sure no one
//!   else holds the port.
//!
//! The socket is returned as a blocking `std::net::TcpListener`; each runtime takes it as its
//! own listener type (`from_std`, `FromRawFd`) and sets non-blocking mode where it needs it.

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Socket, Type};

/// `listen(2)` backlog of every listener of every service. The kernel silently caps it at
/// `net.core.somaxconn` (4096 by default since Linux 5.4; 128 before); the conformance suite
/// reads the effective value from outside (`ss -ltn`, the Send-Q of the LISTEN socket).
pub const LISTEN_BACKLOG: i32 = 1024;

/// The backlog the kernel actually applies to [`LISTEN_BACKLOG`] on this machine.
pub fn effective_backlog() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .map_or(LISTEN_BACKLOG, |max| LISTEN_BACKLOG.min(max))
}

/// Whether the listener shares its port with the service's other per-core listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// One listener for the whole service.
    Exclusive,
    /// `SO_REUSEPORT`: one listener per worker on the same address (call [`probe_listen`] first).
    PerCore,
}

/// Creates, binds and listens: close-on-exec, `SO_REUSEADDR`, `SO_REUSEPORT` if `share` says
/// so, backlog [`LISTEN_BACKLOG`]. Blocking; the caller's runtime decides.
pub fn bind_listener(addr: SocketAddr, share: Share) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM.cloexec(), None)?;
    socket.set_reuse_address(true)?;
    if share == Share::PerCore {
        socket.set_reuse_port(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// Fails with `AddrInUse` if `addr` is taken; returns the concrete address (port 0 resolved).
///
/// SO_REUSEPORT lets a second server bind a port a stale server still holds, and traffic then
/// splits silently between them. Binding once *without* SO_REUSEPORT (but with SO_REUSEADDR,
/// like every listener, so TIME_WAIT leftovers do not count as "taken") fails if anyone holds
/// the port, and resolves port 0 to a concrete free port that all per-core listeners share.
pub fn probe_listen(addr: SocketAddr) -> io::Result<SocketAddr> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM.cloexec(), None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket
        .local_addr()?
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not an inet address"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn sockopt(l: &TcpListener, opt: libc::c_int) -> libc::c_int {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `v`.
        let rc = unsafe {
            libc::getsockopt(
                l.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&raw mut v).cast(),
                &mut len,
            )
        };
        assert_eq!(rc, 0);
        v
    }

    #[test]
    fn resolves_port_zero_and_detects_a_taken_port() {
        let a = probe_listen("127.0.0.1:0".parse().unwrap()).unwrap();
        assert_ne!(a.port(), 0);
        let held = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = probe_listen(held.local_addr().unwrap()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AddrInUse);
    }

    #[test]
    fn listener_options() {
        let any = "127.0.0.1:0".parse().unwrap();
        let one = bind_listener(any, Share::Exclusive).unwrap();
        assert_eq!(sockopt(&one, libc::SO_REUSEADDR), 1);
        assert_eq!(sockopt(&one, libc::SO_REUSEPORT), 0);
        let addr = probe_listen(any).unwrap();
        let a = bind_listener(addr, Share::PerCore).unwrap();
        let b = bind_listener(addr, Share::PerCore).unwrap();
        assert_eq!(sockopt(&a, libc::SO_REUSEADDR), 1);
        assert_eq!(sockopt(&b, libc::SO_REUSEPORT), 1);
        // Taken by per-core listeners: the probe (no SO_REUSEPORT) refuses it.
        assert_eq!(
            probe_listen(addr).unwrap_err().kind(),
            io::ErrorKind::AddrInUse
        );
    }
}
