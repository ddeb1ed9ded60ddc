//! Start-up time: exec → TCP connect accepted → first `HTTP/1.1 200` on /ping (a suite
//! service) or on the scenario's path (a server the suite did not write, which need not
//! have /ping), at µs resolution. Timing the 200, not the open port: some runtimes accept long before serving.
//! The clock starts at the child's own timestamp just before `execve` (`Proc::exec_at_ns`),
//! so nothing the runner does to launch it counts; the child is launched vfork-style
//! (`Proc::launch`), so that execve costs what it costs from any launcher rather than
//! tearing down a copy of the runner. The probe runs from the generator's CPUs, retries at
//! once on a refused connection and sleeps only 50 µs between attempts. Measured starts
//! follow a warm-up start (`service::warm`).

use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use super::http;
use super::tls::Stream;
use crate::interrupt;
use crate::process::Proc;

#[derive(Debug, Clone, Copy)]
pub struct Ready {
    pub connect_us: u64,
    pub first_200_us: u64,
    /// spawn call → exec, when the child's clock was read.
    pub launch_us: Option<u64>,
}

/// Gap between connection attempts while nothing listens yet: short next to any runtime's
/// start-up, long enough not to flood the service's CPU with SYNs.
const RETRY: Duration = Duration::from_micros(50);

/// Polls until /ping answers 200 in cleartext, the process exits, the timeout passes or we
/// are interrupted (error text says which).
pub fn wait_ready(proc: &mut Proc, addr: SocketAddr, timeout: Duration) -> Result<Ready, String> {
    wait_ready_at(proc, addr, "/ping", timeout, false)
}

/// Polls until `path` (a request target such as `/ping` or `/sleep?ms=5`) answers 200 — over
/// `tls`, after a TLS handshake — the process exits, the timeout passes or we are
/// interrupted (error text says which).
pub fn wait_ready_at(
    proc: &mut Proc,
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
    tls: bool,
) -> Result<Ready, String> {
    let request = http::request(path, addr, "startup");
    let t0_ns = proc.exec_at_ns.unwrap_or(proc.spawned_at_ns);
    let launch_us = proc
        .exec_at_ns
        .map(|e| e.saturating_sub(proc.spawned_at_ns) / 1000);
    let since = || crate::process::mono_ns().saturating_sub(t0_ns) / 1000;
    let deadline = proc.spawned_at + timeout;
    let mut connect_us = None;
    let mut last_err = String::from("never accepted a connection");
    loop {
        if let Some(st) = proc.try_wait() {
            return Err(format!("exited during start-up with {st} ({last_err})"));
        }
        if interrupt::requested() {
            return Err("interrupted during start-up".into());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "not ready within {} ms: {last_err}",
                timeout.as_millis()
            ));
        }
        match TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            Ok(s) => {
                connect_us.get_or_insert(since());
                let probed = s
                    .set_read_timeout(Some(Duration::from_secs(1)))
                    .map_err(|e| e.to_string())
                    .and_then(|()| Stream::over(s, tls))
                    .and_then(|mut s| probe(&mut s, &request));
                match probed {
                    Ok(()) => {
                        return Ok(Ready {
                            connect_us: connect_us.unwrap_or(0),
                            first_200_us: since(),
                            launch_us,
                        });
                    }
                    Err(e) => {
                        last_err = e;
                        std::thread::sleep(RETRY);
                    }
                }
            }
            Err(e) => {
                last_err = format!("connect: {e}");
                std::thread::sleep(RETRY);
            }
        }
    }
}

fn probe(s: &mut Stream, request: &[u8]) -> Result<(), String> {
    let _ = s.tcp().set_nodelay(true);
    match http::status(s, request)? {
        200 => Ok(()),
        code => Err(format!("first status: {code}")),
    }
}
