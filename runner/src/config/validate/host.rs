//! What the machine allows, read once before the checks: the CPUs this process may use, the
//! open-file limit and the local port range. A level's connections must fit both: each one
//! is a socket in the service and in loadgen, and a local port of 127.0.0.1.

use std::ops::Range;

use super::Errs;
use crate::limits::cpus::allowed_cpus;

/// Files a process holds besides its connections (stdio, listener, epoll/io_uring
/// instances, timers, logs), allowed for on top of the connection count.
const FD_HEADROOM: u64 = 64;

#[derive(Debug, Clone)]
pub(super) struct Host {
    /// CPUs in this process's affinity mask.
    pub allowed_cpus: Vec<u32>,
    /// RLIMIT_NOFILE (soft, hard); None = unlimited or unknown. Services inherit the soft
    /// limit from `matrix`; loadgen raises its own to the hard one.
    pub open_files: Option<(u64, u64)>,
    /// /proc/sys/net/ipv4/ip_local_port_range; None = unknown.
    pub local_ports: Option<(u32, u32)>,
}

impl Host {
    pub fn current() -> Host {
        Host {
            allowed_cpus: allowed_cpus(),
            open_files: open_files(),
            local_ports: std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .ok()
                .and_then(|s| parse_port_range(&s)),
        }
    }

    /// `connections` sockets at once in the service and in loadgen, to one port of 127.0.0.1.
    pub fn check_connections(
        &self,
        errs: &mut Errs,
        span: Range<usize>,
        field: &str,
        connections: u32,
    ) {
        if let Some((lo, hi)) = self.local_ports {
            let ports = hi.saturating_sub(lo) + 1;
            if connections > ports {
                errs.at(
                    span.clone(),
                    field,
                    format!(
                        "{connections} connections need as many local ports, but \
                         net.ipv4.ip_local_port_range ({lo}-{hi}) has {ports}"
                    ),
                );
            }
        }
        if let Some((soft, hard)) = self.open_files {
            let files = u64::from(connections) + FD_HEADROOM;
            if soft < files {
                let raise = if hard >= files {
                    format!("raise it with `ulimit -n {hard}` before running")
                } else {
                    format!("the hard limit is {hard}, so use fewer connections")
                };
                errs.at(
                    span,
                    field,
                    format!(
                        "{connections} connections need about {files} open files in the \
                         service, but `ulimit -n` is {soft} (services inherit it); {raise}"
                    ),
                );
            }
        }
    }
}

fn open_files() -> Option<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    if !ok {
        return None;
    }
    let hard = finite(lim.rlim_max).unwrap_or(u64::MAX);
    finite(lim.rlim_cur).map(|soft| (soft, hard))
}

/// "32768\t60999\n" → (32768, 60999).
fn parse_port_range(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split_whitespace().map(str::parse::<u32>);
    match (it.next(), it.next()) {
        (Some(Ok(lo)), Some(Ok(hi))) if lo <= hi => Some((lo, hi)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_range_parses_as_proc_writes_it() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("60999 32768"), None);
        assert_eq!(parse_port_range(""), None);
    }
}
