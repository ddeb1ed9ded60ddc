//! Starting a service on a fresh loopback port under a confinement.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;

use crate::limits::Confinement;
use crate::process::Proc;

/// A port that is free right now (bound without SO_REUSEPORT, then released).
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// True when nothing listens on the port — a plain bind (no SO_REUSEPORT) succeeds. A stale
/// server with SO_REUSEPORT would otherwise silently share the port with the next one.
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).is_ok()
}

pub fn spawn(
    binary: &Path,
    port: u16,
    workers: u32,
    extra: &[String],
    confinement: &Confinement,
) -> std::io::Result<Proc> {
    let mut cmd = Command::new(binary);
    cmd.arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--workers")
        .arg(workers.to_string())
        .args(extra);
    Proc::spawn(cmd, confinement)
}
