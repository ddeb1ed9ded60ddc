//! Starting a service on a fresh loopback port under a confinement.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;

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

/// Starts the service listening on `port`, launched vfork-style ([`Proc::launch`]) with the
/// calling thread on `probe_cpus` meanwhile (where it will probe for readiness next).
pub fn spawn(
    binary: &Path,
    port: u16,
    workers: u32,
    extra: &[String],
    confinement: &Confinement,
    probe_cpus: &[u32],
) -> std::io::Result<Proc> {
    let mut args: Vec<OsString> = vec![
        "--listen".into(),
        format!("127.0.0.1:{port}").into(),
        "--workers".into(),
        workers.to_string().into(),
    ];
    args.extend(extra.iter().map(OsString::from));
    Proc::launch(binary, &args, confinement, probe_cpus)
}
