//! Starting a service on a fresh port under a confinement.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;

use crate::limits::Confinement;
use crate::process::Proc;

/// An address on `ip` whose port is free right now (bound without SO_REUSEPORT, then
/// released).
pub fn free_addr(ip: IpAddr) -> std::io::Result<SocketAddr> {
    TcpListener::bind(SocketAddr::new(ip, 0))?.local_addr()
}

/// True when nothing listens on the port — a plain bind (no SO_REUSEPORT) succeeds. A stale
/// server with SO_REUSEPORT would otherwise silently share the port with the next one.
pub fn port_is_free(port: u16) -> bool {
    TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).is_ok()
}

/// Starts the service listening on `addr`, launched vfork-style ([`Proc::launch`]) with the
/// calling thread on `probe_cpus` meanwhile (where it will probe for readiness next).
pub fn spawn(
    binary: &Path,
    addr: SocketAddr,
    workers: u32,
    extra: &[String],
    confinement: &Confinement,
    probe_cpus: &[u32],
) -> std::io::Result<Proc> {
    let mut args: Vec<OsString> = vec![
        "--listen".into(),
        addr.to_string().into(),
        "--workers".into(),
        workers.to_string().into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    Proc::launch(binary, &args, confinement, probe_cpus)
}
