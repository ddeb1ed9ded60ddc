//! One start of a service, the same on every path that runs a repetition (local, churn, and
//! the agent on another host): warm-up start → spawn → first 200 from the probe CPUs →
//! start-up line and verification → idle RSS; then sampling while the caller loads it, and
//! the stop with the port checked free. Each step returns values — the start record, the
//! start's outcome, the samples and counters — or the `StageError` that ended it; what a
//! cell keeps of them is folded in one place, `CellResult::record` (`results::outcome`).

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{spawn, startup, startup_line, stop, verify, warm};
use crate::limits::{Confinement, cpus};
use crate::process::Proc;
use crate::results::outcome::StartOutcome;
use crate::results::schema::{
    AppliedLimits, EndpointCheck, Stage, StageError, StartRecord, StopRecord,
};
use crate::sample;

/// How to start the service.
pub struct Launch<'a> {
    pub binary: &'a Path,
    pub ip: IpAddr,
    pub workers: u32,
    /// The suite's contract arguments, or an external server's template.
    pub args: spawn::Argv<'a>,
    /// Where the runner launches the service from and probes it (never the service's CPUs);
    /// empty = wherever the caller runs.
    pub probe_cpus: &'a [u32],
    pub startup_timeout: Duration,
    pub stop_grace: Duration,
    /// The endpoint the cell loads, verified with the others.
    pub path: &'a str,
}

/// A start that failed: why, the start record when the service had started (already
/// stopped), and what the start told before it failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failed {
    #[serde(flatten)]
    pub error: StageError,
    pub start: Option<StartRecord>,
    #[serde(flatten)]
    pub outcome: StartOutcome,
}

impl Failed {
    pub fn before_start(error: StageError, limits: Option<AppliedLimits>) -> Failed {
        Failed {
            error,
            start: None,
            outcome: StartOutcome {
                limits,
                ..StartOutcome::default()
            },
        }
    }
}

/// A running, verified service.
pub struct Session {
    pub proc: Proc,
    pub addr: SocketAddr,
    pub start: StartRecord,
    stop_grace: Duration,
}

/// The stopped service.
pub struct Stopped {
    /// With its stop record.
    pub start: StartRecord,
    /// Set when the service had exited on its own before the stop.
    pub died: Option<ExitStatus>,
    pub stderr_tail: Option<String>,
}

impl Session {
    /// Starts the service for repetition `rep`, right after its warm-up start
    /// ([`warm::warm_up`]: same command and confinement, unmeasured, so the measured start
    /// is a warm one whatever ran before it), and checks it against the contract.
    pub fn start(
        l: &Launch,
        conf: &Confinement,
        rep: u32,
    ) -> Result<(Session, StartOutcome), Box<Failed>> {
        let before_start = |e: StageError| Box::new(Failed::before_start(e, conf.record.clone()));
        let warmup_first_200_us = warm::warm_up(
            l.binary,
            l.ip,
            l.workers,
            l.args,
            l.args.ready_path(l.path),
            conf,
            l.probe_cpus,
            l.startup_timeout,
        )
        .map_err(before_start)?;
        let addr = spawn::free_addr(l.ip).map_err(|e| {
            before_start(StageError::at(
                Stage::Spawn,
                format!("no free port on {}: {e}", l.ip),
            ))
        })?;
        // Launched from the probe CPUs, where the readiness probe runs next.
        let proc =
            spawn::spawn(l.binary, addr, l.workers, l.args, conf, l.probe_cpus).map_err(|e| {
                before_start(StageError::at(
                    Stage::Spawn,
                    format!("cannot start {}: {e}", l.binary.display()),
                ))
            })?;
        let start = StartRecord {
            rep,
            pid: proc.pid,
            port: addr.port(),
            connect_us: None,
            first_200_us: None,
            launch_us: None,
            warmup_first_200_us: Some(warmup_first_200_us),
            idle_rss_bytes: None,
            stop: None,
        };
        let mut s = Session {
            proc,
            addr,
            start,
            stop_grace: l.stop_grace,
        };
        let mut outcome = StartOutcome {
            limits: conf.record.clone(),
            ..StartOutcome::default()
        };
        let ready = s
            .wait_ready(l)
            .and_then(|()| s.check(l.path, l.args, &mut outcome));
        if let Err(error) = ready {
            let stopped = s.stop();
            return Err(Box::new(Failed {
                error: error.with_tail(stopped.stderr_tail),
                start: Some(stopped.start),
                outcome,
            }));
        }
        s.start.idle_rss_bytes = sample::tree_status(&s.proc.tree()).map(|st| st.0);
        Ok((s, outcome))
    }

    /// Start-up time: until the first 200, probed from the probe CPUs (the runner must not
    /// take the server's CPU while the service starts).
    fn wait_ready(&mut self, l: &Launch) -> Result<(), StageError> {
        let (proc, addr) = (&mut self.proc, self.addr);
        let r = cpus::on_cpus(l.probe_cpus, || {
            startup::wait_ready_at(
                proc,
                addr,
                l.args.ready_path(l.path),
                l.startup_timeout,
                l.args.tls(),
            )
        })
        .map_err(|e| StageError::at(Stage::Startup, e))?;
        self.start.connect_us = Some(r.connect_us);
        self.start.first_200_us = Some(r.first_200_us);
        self.start.launch_us = r.launch_us;
        Ok(())
    }

    /// The start-up line and every endpoint, checked against the contract; a start-up line
    /// that cannot be read is one failed check among them. An external service (`command`)
    /// has no start-up line and is checked on its path only.
    fn check(
        &self,
        path: &str,
        args: spawn::Argv,
        outcome: &mut StartOutcome,
    ) -> Result<(), StageError> {
        let (external, tls) = (matches!(args, spawn::Argv::External(_)), args.tls());
        let timeout = Duration::from_secs(2);
        if external {
            outcome.verification = verify::verify_path(self.addr, path, timeout, false);
        } else {
            let line = startup_line::read(&self.proc, Duration::from_millis(500));
            outcome.verification = verify::verify(self.addr, path, timeout, tls);
            match line {
                Ok(b) => outcome.startup_line = Some(b),
                Err(e) => outcome.verification.push(EndpointCheck {
                    path: "(start-up line)".into(),
                    passed: false,
                    status: None,
                    problems: vec![e],
                    headers: Default::default(),
                    body_bytes: None,
                    latency_us: None,
                }),
            }
        }
        let checks = &outcome.verification;
        let failed: Vec<String> = checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| format!("{}: {}", c.path, c.problems.join("; ")))
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(StageError::at(Stage::Verify, failed.join(" | ")))
        }
    }

    /// Stops the service ([`stop::stop`], with the port check also made on the address it
    /// listened on) and reaps it.
    pub fn stop(mut self) -> Stopped {
        let died = self.proc.try_wait();
        let mut rec: StopRecord = stop::stop(&mut self.proc, self.addr.port(), self.stop_grace);
        rec.port_free_after = rec.port_free_after && TcpListener::bind(self.addr).is_ok();
        self.start.stop = Some(rec);
        Stopped {
            start: self.start,
            died,
            stderr_tail: self.proc.stderr_tail(),
        }
    }
}
