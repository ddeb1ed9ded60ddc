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

/// How a service is told where to listen.
#[derive(Debug, Clone, Copy)]
pub enum Argv<'a> {
    /// A service of this suite: `--listen <addr> --workers <n>`, then these.
    Contract(&'a [String]),
    /// A server the suite did not write: this template, placeholders replaced
    /// (`super::external`).
    External(&'a [String]),
}

// Callers that start suite services pass their extra arguments as before.
impl<'a> From<&'a [String]> for Argv<'a> {
    fn from(extra: &'a [String]) -> Self {
        Argv::Contract(extra)
    }
}

impl<'a, const N: usize> From<&'a [String; N]> for Argv<'a> {
    fn from(extra: &'a [String; N]) -> Self {
        Argv::Contract(extra)
    }
}

impl<'a> From<&'a Vec<String>> for Argv<'a> {
    fn from(extra: &'a Vec<String>) -> Self {
        Argv::Contract(extra)
    }
}

impl Argv<'_> {
    /// The path readiness polls: /ping for a suite service (every one has it), the
    /// scenario's `path` for a server the suite did not write.
    pub fn ready_path<'p>(&self, path: &'p str) -> &'p str {
        match self {
            Argv::Contract(_) => "/ping",
            Argv::External(_) => path,
        }
    }

    /// A suite service told to serve a TLS protocol (`--protocol http/1.1+tls` or `h2+tls`,
    /// as the plan gives it): it is started with the test certificate, and probed over TLS.
    pub fn tls(&self) -> bool {
        match self {
            Argv::Contract(extra) => extra.windows(2).any(|w| {
                w[0] == "--protocol"
                    && <loadgen::Protocol as clap::ValueEnum>::from_str(&w[1], false)
                        .is_ok_and(loadgen::Protocol::tls)
            }),
            Argv::External(_) => false,
        }
    }

    /// The arguments for one start on `addr`; a TLS service's certificate and key among them
    /// (made on first use: [`super::tls::files`]).
    pub fn for_start(&self, addr: SocketAddr, workers: u32) -> std::io::Result<Vec<OsString>> {
        Ok(match self {
            Argv::Contract(extra) => {
                let mut args: Vec<OsString> = vec![
                    "--listen".into(),
                    addr.to_string().into(),
                    "--workers".into(),
                    workers.to_string().into(),
                ];
                args.extend(extra.iter().map(OsString::from));
                if self.tls() {
                    let tls = super::tls::service_args().map_err(std::io::Error::other)?;
                    args.extend(tls.iter().map(OsString::from));
                }
                args
            }
            Argv::External(t) => super::external::expand(t, addr, workers)
                .into_iter()
                .map(OsString::from)
                .collect(),
        })
    }
}

/// Starts the service listening on `addr`, launched vfork-style ([`Proc::launch`]) with the
/// calling thread on `probe_cpus` meanwhile (where it will probe for readiness next).
pub fn spawn<'a>(
    binary: &Path,
    addr: SocketAddr,
    workers: u32,
    argv: impl Into<Argv<'a>>,
    confinement: &Confinement,
    probe_cpus: &[u32],
) -> std::io::Result<Proc> {
    Proc::launch(
        binary,
        &argv.into().for_start(addr, workers)?,
        confinement,
        probe_cpus,
    )
}
