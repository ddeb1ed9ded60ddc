//! What the runner and a host's agent (`matrix agent`) say to each other: one JSON object
//! per line, requests on the agent's stdin, replies on its stdout. Externally tagged
//! (`{"load": {...}}`): an internal tag would buffer the report and lose its integer map
//! keys. The session ends when the agent's stdin closes; whatever the agent started dies
//! with it.

use std::collections::BTreeMap;

use loadgen::{LoadSpec, Report};
use serde::{Deserialize, Serialize};

use crate::count::exact::{Load, ServerCounted};
use crate::observe::Observation;
/// A failed start on the host travels as the session's own `Failed` (stage, reason, stderr
/// tail, and what the start told), so both sides share one failure shape.
pub use crate::results::outcome::StartOutcome;
use crate::results::schema::{Environment, ProcessCounts, ProfileLimits, StageError, StartRecord};
pub use crate::service::session::Failed;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// The agent's wall clock, for the offset estimate.
    Clock,
    /// The host's environment record, with these binaries (name → path on the host).
    Env {
        binaries: BTreeMap<String, String>,
        loadgen: String,
    },
    /// Start the service confined, wait for its first 200, verify it, then sample it until
    /// `Stop`.
    Serve(Box<Serve>),
    /// The measured window on the agent's clock: stop sampling, stop the service, report.
    Stop {
        window_start_unix_us: u64,
        window_s: f64,
        responses: u64,
    },
    /// Run loadgen with `spec`, confined to `cpus`; its /proc counts over its window.
    Load {
        loadgen: String,
        spec: Box<LoadSpec>,
        cpus: Vec<u32>,
    },
    /// While serving, after the timed load: attach perf to the service for the exact-count
    /// window (`count::exact`).
    CountStart,
    /// While counting: stop perf; the loads began at these times (this host's clock).
    CountEnd { load_starts_unix_us: Vec<u64> },
    /// One exact load of the window: loadgen under `perf stat`, confined to `cpus`.
    ExactLoad {
        loadgen: String,
        spec: Box<LoadSpec>,
        cpus: Vec<u32>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Serve {
    pub binary: String,
    /// The address to listen on (the port is chosen by the agent).
    pub listen_ip: String,
    pub args: Vec<String>,
    pub limits: ProfileLimits,
    pub rep: u32,
    pub path: String,
    pub startup_timeout_ms: u64,
    pub stop_grace_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// First line of every session.
    Hello {
        pid: u32,
        unix_us: u64,
    },
    Clock {
        unix_us: u64,
    },
    Env {
        environment: Box<Environment>,
    },
    Ready(Box<Ready>),
    Stopped(Box<Stopped>),
    Loaded {
        report: Box<Report>,
        exit_code: Option<i32>,
        /// The generator's /proc counts over its report's window.
        #[serde(default)]
        counts: Option<Box<ProcessCounts>>,
    },
    /// perf is counting the service, or why it cannot.
    Counting {
        unmeasured: Option<String>,
    },
    Counted(Box<ServerCounted>),
    ExactLoaded(Box<Load>),
    Failed(Box<Failed>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ready {
    pub port: u16,
    pub start: StartRecord,
    #[serde(flatten)]
    pub outcome: StartOutcome,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stopped {
    pub start: StartRecord,
    /// What the service's observers on the host saw over the window, whole.
    pub seen: Observation,
    /// The service had exited before the stop ("exit status: 1").
    pub died: Option<String>,
    pub stderr_tail: Option<String>,
}

impl Reply {
    /// A failure before anything started.
    pub fn failed(error: StageError) -> Reply {
        Reply::Failed(Box::new(Failed::before_start(error, None)))
    }
}
