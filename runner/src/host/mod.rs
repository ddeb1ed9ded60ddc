//! Server and generators on other machines, driven over SSH: the runner side.
//!
//! - `ssh`: the system OpenSSH client, one multiplexed master connection per host;
//! - `work_dir`: where they go, made private and checked before anything is shipped;
//! - `ship`: the exact binaries, copied (or `nix copy`) and checked by sha256 on arrival;
//! - `session`: JSON lines with `matrix agent` on the host (`crate::agent`; both sides
//!   speak `agent::protocol`), whose stdin closing ends everything it started;
//! - `rep`: one repetition of a multi-host cell — the server on its host, the load split
//!   between the generator hosts, their full histograms merged (`loadgen::Report::merge`).
//!
//! [`Fleet::connect`] readies every host the plan uses when a run starts (or resumes) and
//! records each in run.json (`hosts`): destination, binaries with their hashes, clock
//! offset and the host's own environment record. A host that cannot be reached is recorded
//! with the reason, and each of its cells fails with that reason; other cells run.

pub mod rep;
pub mod session;
pub mod ship;
pub mod ssh;
pub mod work_dir;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::panic::resume_unwind;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::agent::protocol::{Reply, Request};
use crate::config::{HostDef, LOCAL_HOST, Matrix};
use crate::results::schema::{CellSpec, HostRecord, ShippedBinary};
use session::Session;
use ssh::Ssh;

/// Waiting for an agent's hello (ssh connection over the master, exec).
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(20);

/// A host step's failure, and whether the host (or the way to it) was lost rather than the
/// step failing on it: set where the error is made — an unavailable host, an agent whose
/// connection ended, whose stdin is gone or that stops answering. `--resume` runs a cell
/// whose host was lost again.
#[derive(Debug, Clone, PartialEq)]
pub struct HostError {
    pub reason: String,
    pub lost: bool,
}

impl HostError {
    pub fn lost(reason: String) -> HostError {
        HostError { reason, lost: true }
    }

    pub fn failed(reason: String) -> HostError {
        HostError {
            reason,
            lost: false,
        }
    }

    /// The same failure, its reason prefixed ("host gen: …").
    pub fn context(self, prefix: &str) -> HostError {
        HostError {
            reason: format!("{prefix}{}", self.reason),
            ..self
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl From<String> for HostError {
    fn from(reason: String) -> HostError {
        HostError::failed(reason)
    }
}

enum Transport {
    Local(PathBuf),
    Ssh(Box<Ssh>),
}

/// One host, ready to start agent sessions.
pub struct Endpoint {
    pub name: String,
    transport: Option<Transport>,
    /// "matrix", "loadgen" and service names → the path on the host.
    pub bins: BTreeMap<String, String>,
    /// Where a service there listens and generators connect.
    pub address: IpAddr,
    /// Host clock − runner clock (µs).
    pub clock_offset_us: i64,
    /// Why the host cannot be used.
    pub unavailable: Option<String>,
}

impl Endpoint {
    /// A new agent session on the host.
    pub fn session(&self) -> Result<Session, HostError> {
        if let Some(why) = &self.unavailable {
            return Err(HostError::lost(format!(
                "host {} unavailable: {why}",
                self.name
            )));
        }
        let cmd = match self.transport.as_ref() {
            Some(Transport::Local(exe)) => {
                let mut c = Command::new(exe);
                c.arg("agent");
                ssh::tie_to_runner(&mut c);
                c
            }
            Some(Transport::Ssh(s)) => {
                let matrix = self.bins.get("matrix").cloned().unwrap_or_default();
                s.command(&format!("exec {} agent", ssh::quote(&matrix)))
            }
            None => {
                return Err(HostError::lost(format!(
                    "host {}: not connected",
                    self.name
                )));
            }
        };
        Session::start(&self.name, cmd, HELLO_TIMEOUT)
    }
}

/// Every host the run uses, by name.
#[derive(Default)]
pub struct Fleet {
    pub endpoints: BTreeMap<String, Endpoint>,
}

/// What each host must have: the services it serves, and loadgen if it generates.
fn needs(cells: &[&CellSpec]) -> BTreeMap<String, (BTreeSet<String>, bool)> {
    let mut n: BTreeMap<String, (BTreeSet<String>, bool)> = BTreeMap::new();
    for c in cells {
        let Some(p) = &c.hosts else { continue };
        n.entry(p.server_host.clone())
            .or_default()
            .0
            .insert(c.service.clone());
        for g in &p.loadgen_hosts {
            n.entry(g.clone()).or_default().1 = true;
        }
    }
    n
}

impl Fleet {
    /// Connects to, ships binaries to and records every host `cells` use. Empty for a
    /// single-machine plan. The hosts are made ready side by side (each is seconds of SSH
    /// round trips, copies and probes, and none waits on another); the records keep the
    /// hosts' name order.
    pub fn connect(
        m: &Matrix,
        cells: &[&CellSpec],
        note: &mut dyn FnMut(&str),
    ) -> (Fleet, Vec<HostRecord>) {
        let mut jobs = Vec::new();
        for (name, (services, generates)) in needs(cells) {
            let mut wanted: BTreeMap<String, PathBuf> = BTreeMap::new();
            for s in &services {
                if let Some(def) = m.services.iter().find(|d| &d.name == s) {
                    wanted.insert(s.clone(), def.binary.clone());
                }
            }
            if generates {
                wanted.insert("loadgen".into(), m.loadgen.clone());
            }
            let def = m.hosts.iter().find(|h| h.name == name);
            if let Some(def) = def {
                note(&format!("host {name}: connecting to {}", def.destination()));
            }
            jobs.push((name, def, wanted));
        }
        let ready: Vec<(Endpoint, HostRecord)> = std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .iter()
                .map(|(_, def, wanted)| {
                    scope.spawn(move || match def {
                        None => local(wanted),
                        Some(def) => remote(def, wanted),
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| resume_unwind(p)))
                .collect()
        });
        let mut fleet = Fleet::default();
        let mut records = Vec::new();
        for ((name, ..), (ep, rec)) in jobs.into_iter().zip(ready) {
            if let Some(why) = &rec.unavailable {
                note(&format!("host {name} UNAVAILABLE: {why}"));
            }
            fleet.endpoints.insert(name, ep);
            records.push(rec);
        }
        (fleet, records)
    }

    pub fn get(&self, name: &str) -> Result<&Endpoint, String> {
        self.endpoints
            .get(name)
            .ok_or_else(|| format!("host {name} was not prepared for this run"))
    }
}

fn record(name: &str, destination: String, address: Option<String>) -> HostRecord {
    HostRecord {
        name: name.to_string(),
        destination,
        address,
        binaries: BTreeMap::new(),
        clock_offset_us: None,
        clock_rtt_us: None,
        environment: None,
        unavailable: None,
    }
}

/// The runner's own machine as a host: binaries run in place.
fn local(wanted: &BTreeMap<String, PathBuf>) -> (Endpoint, HostRecord) {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("matrix"));
    let mut rec = record(LOCAL_HOST, LOCAL_HOST.into(), Some("127.0.0.1".into()));
    let mut bins = BTreeMap::new();
    let mut unavailable = None;
    for (name, path) in wanted.iter().chain([(&"matrix".to_string(), &exe)]) {
        let p = path.display().to_string();
        match ship::sha256_file(path) {
            Ok(sha) => {
                rec.binaries.insert(
                    name.clone(),
                    ShippedBinary {
                        local_path: crate::binaries::display_path(path),
                        remote_path: p.clone(),
                        sha256: sha,
                        via: "local".into(),
                        verified: true,
                    },
                );
            }
            Err(e) => unavailable = Some(format!("{name}: {e}")),
        }
        bins.insert(name.clone(), p);
    }
    let mut ep = Endpoint {
        name: LOCAL_HOST.into(),
        transport: Some(Transport::Local(exe)),
        bins,
        address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        clock_offset_us: 0,
        unavailable,
    };
    introduce(&mut ep, &mut rec);
    (ep, rec)
}

/// The data-plane address: `address`, else `host` as an address, else `host` resolved.
fn address_of(def: &HostDef) -> Result<IpAddr, String> {
    if let Some(a) = &def.address {
        return a.parse().map_err(|e| format!("address {a:?}: {e}"));
    }
    if let Ok(ip) = def.host.parse() {
        return Ok(ip);
    }
    (def.host.as_str(), 22)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| format!("cannot resolve {}; set `address`", def.host))
}

fn remote(def: &HostDef, wanted: &BTreeMap<String, PathBuf>) -> (Endpoint, HostRecord) {
    let dest = match def.port {
        Some(p) => format!("{}:{p}", def.destination()),
        None => def.destination(),
    };
    let address = address_of(def);
    let mut rec = record(
        &def.name,
        dest,
        address.as_ref().ok().map(ToString::to_string),
    );
    let mut ep = Endpoint {
        name: def.name.clone(),
        transport: None,
        bins: BTreeMap::new(),
        address: *address
            .as_ref()
            .unwrap_or(&IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
        clock_offset_us: 0,
        unavailable: address.err(),
    };
    if ep.unavailable.is_none() {
        match Ssh::connect(def) {
            Ok(s) => ep.transport = Some(Transport::Ssh(Box::new(s))),
            Err(e) => ep.unavailable = Some(e),
        }
    }
    if let (None, Some(Transport::Ssh(s))) = (&ep.unavailable, &ep.transport) {
        let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("matrix"));
        let flake = crate::env::provenance::provenance().via_nix_flake;
        let run = |cmd: &str| s.command(cmd);
        // Made and checked once, before the first binary goes there.
        let mut work_dir: Option<String> = None;
        for (name, path) in wanted.iter().chain([(&"matrix".to_string(), &exe)]) {
            let shipped = if flake && path.starts_with("/nix/store") {
                let uri = format!("ssh://{}", def.destination());
                ship::nix_copy(&def.name, &run, &uri, &s.options_line(), name, path)
            } else {
                let dir = match &work_dir {
                    Some(d) => Ok(d.clone()),
                    None => work_dir::prepare(&run, &def.work_dir),
                };
                dir.and_then(|d| {
                    work_dir = Some(d.clone());
                    ship::ship(&def.name, &run, &d, name, path)
                })
            };
            match shipped {
                Ok(b) => {
                    ep.bins.insert(name.clone(), b.remote_path.clone());
                    rec.binaries.insert(name.clone(), b);
                }
                Err(e) => {
                    ep.unavailable = Some(e);
                    break;
                }
            }
        }
    }
    introduce(&mut ep, &mut rec);
    rec.unavailable = ep.unavailable.clone();
    (ep, rec)
}

/// A first session: the clock offset (best of five round trips) and the environment.
fn introduce(ep: &mut Endpoint, rec: &mut HostRecord) {
    if ep.unavailable.is_some() {
        rec.unavailable = ep.unavailable.clone();
        return;
    }
    let r = (|| -> Result<(), HostError> {
        let mut s = ep.session()?;
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..5 {
            let t0 = crate::sample::now_unix_us();
            let Reply::Clock { unix_us } = s.ask(&Request::Clock, Duration::from_secs(10))? else {
                return Err(format!("host {}: no clock reply", ep.name).into());
            };
            let t1 = crate::sample::now_unix_us();
            let rtt = t1.saturating_sub(t0);
            let offset = unix_us as i64 - ((t0 + t1) / 2) as i64;
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        if let Some((rtt, off)) = best {
            ep.clock_offset_us = off;
            rec.clock_offset_us = Some(off);
            rec.clock_rtt_us = Some(rtt);
        }
        let req = Request::Env {
            binaries: ep
                .bins
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            loadgen: ep.bins.get("loadgen").cloned().unwrap_or_default(),
        };
        match s.ask(&req, Duration::from_secs(60))? {
            Reply::Env { environment } => {
                rec.environment = Some(*environment);
                Ok(())
            }
            other => Err(format!("host {}: unexpected reply {other:?}", ep.name).into()),
        }
    })();
    if let Err(e) = r {
        ep.unavailable = Some(e.reason);
    }
    rec.unavailable = ep.unavailable.clone();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(exe: &str, unavailable: Option<&str>) -> Endpoint {
        Endpoint {
            name: "gen".into(),
            transport: Some(Transport::Local(PathBuf::from(exe))),
            bins: BTreeMap::new(),
            address: IpAddr::from([127, 0, 0, 1]),
            clock_offset_us: 0,
            unavailable: unavailable.map(String::from),
        }
    }

    #[test]
    fn a_lost_host_is_marked_where_the_error_is_made() {
        let e = endpoint("/bin/true", Some("ssh: Connection refused")).session();
        let e = e.err().expect("an unavailable host has no session");
        assert!(e.lost && e.reason.contains("unavailable"), "{e:?}");
        // An "agent" that exits at once: its connection ended before the hello.
        let e = endpoint("/bin/true", None)
            .session()
            .err()
            .expect("no hello");
        assert!(e.lost && e.reason.contains("connection ended"), "{e:?}");
        // A program that cannot start is this machine's failure, not a lost host.
        let e = endpoint("/nonexistent/matrix", None)
            .session()
            .err()
            .expect("no agent");
        assert!(
            !e.lost && e.reason.contains("cannot start the agent"),
            "{e:?}"
        );
        assert!(!HostError::from("host srv: startup: no 200 within 1500 ms".to_string()).lost);
    }
}
