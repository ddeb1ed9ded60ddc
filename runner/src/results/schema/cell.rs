//! The expanded plan (one `CellSpec` per cell, in run.json) and cells/<key>.json: a cell's
//! repetitions as they ran.

use std::collections::BTreeMap;

use loadgen::{LoadModel, LoadSpec, Report};
use ping_common::startup::StartupLine;
use serde::{Deserialize, Serialize};

use super::analysis::{Adaptive, ChurnRep, ChurnSpec, ChurnSummary, Stat, Stopping};
use super::counted::{CountedSummary, InstructionCount, RepCounts};

// ---------------------------------------------------------------------------------------
// The expanded plan
// ---------------------------------------------------------------------------------------

/// One cell of the matrix with every setting resolved: what will be (or was) run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// `<service>__<scenario>__<level>__<profile>`, file-name safe; the cell's identity.
    pub key: String,
    pub service: String,
    pub scenario: String,
    /// "c64" (closed, connections), "c16p16" (pipelined) or "r20000" (open, req/s).
    pub level: String,
    pub profile: String,
    /// Request path + query, e.g. "/sleep?ms=1".
    pub path: String,
    pub load: LoadModel,
    pub keepalive: bool,
    /// Extra request headers, "Name: value", in the order sent (the scenario's `headers`).
    /// Part of what the cell measures: compare refuses cells whose headers differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<String>,
    /// HTTP/1.1 in cleartext (absent), h2c, http/1.1+tls or h2+tls: over HTTP/2, `load`'s
    /// pipeline is its streams per connection. Part of what the cell measures: compare
    /// refuses cells whose protocols differ.
    #[serde(default, skip_serializing_if = "loadgen::Protocol::is_http11")]
    pub protocol: loadgen::Protocol,
    pub loadgen_threads: u32,
    pub repetitions: u32,
    pub warmup_ms: u64,
    pub duration_ms: u64,
    pub cooldown_ms: u64,
    pub request_timeout_ms: u64,
    pub expect_body_bytes: Option<u64>,
    pub limits: ProfileLimits,
    /// Extra service arguments from the matrix file.
    pub service_args: Vec<String>,
    /// A connection-churn cell (`model = "churn"`): the runner opens and closes connections
    /// itself and reads the service's RSS; `load` is not run by loadgen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnSpec>,
    /// Adaptive repetitions: `repetitions` is then the least a cell gets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<Adaptive>,
    /// A calibration arm ("a" or "b"): the same service twice, to measure the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    /// A multi-host cell: which host serves and which generate the load. Absent for a
    /// single-machine cell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Placement>,
    /// A server the suite did not write (`command = [...]`): `service_args` is its argument
    /// template; it prints no start-up line and is verified on `path` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

/// Where a multi-host cell runs, by `[[hosts]]` name ("local" = the runner's machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub server_host: String,
    /// The load is split between these (connections or rate), in this order.
    pub loadgen_hosts: Vec<String>,
}

impl CellSpec {
    /// Whether `--count-instructions` counts this cell: closed loop at one kept-alive
    /// connection, one request in flight (the count's own requests are sequential on one
    /// connection, so only this load is the one it counts).
    pub fn counts_instructions(&self) -> bool {
        matches!(
            self.load,
            LoadModel::Closed {
                connections: 1,
                pipeline: 0 | 1,
            }
        ) && self.keepalive
    }

    /// The most repetitions this cell can take (the plan's worst case).
    pub fn max_repetitions(&self) -> u32 {
        self.adaptive.map_or(self.repetitions, |a| {
            a.max_repetitions.max(self.repetitions)
        })
    }

    /// The extra headers as (name, value), as loadgen and the instruction count send them.
    pub fn header_pairs(&self) -> Vec<(String, String)> {
        self.headers
            .iter()
            .filter_map(|h| h.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect()
    }

    /// The generator's spec for one repetition of this cell against the service on `port`.
    pub fn load_spec(&self, port: u16) -> LoadSpec {
        let conns = match self.load {
            LoadModel::Closed { connections, .. } | LoadModel::Open { connections, .. } => {
                connections
            }
        };
        LoadSpec {
            url: format!("{}://127.0.0.1:{port}{}", self.protocol.scheme(), self.path),
            model: self.load.clone(),
            threads: self.loadgen_threads.min(conns).max(1),
            keepalive: self.keepalive,
            duration_ms: Some(self.duration_ms),
            requests: None,
            warmup_ms: self.warmup_ms,
            timeout_ms: self.request_timeout_ms,
            expect_status: 200,
            expect_body_bytes: self.expect_body_bytes,
            headers: self.header_pairs(),
            io: loadgen::IoChoice::Auto,
            protocol: self.protocol,
        }
    }
}

/// A resource profile as requested (identical for every service).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileLimits {
    pub server_cpus: Vec<u32>,
    pub loadgen_cpus: Vec<u32>,
    /// CPUs of CFS quota (0.2 = Kubernetes `cpu: 200m`); None = no quota.
    pub cpu_quota: Option<f64>,
    pub memory_max_bytes: Option<u64>,
    /// `--workers` passed to the service.
    pub workers: u32,
}

// ---------------------------------------------------------------------------------------
// cells/<key>.json
// ---------------------------------------------------------------------------------------

/// One cell's complete record, rewritten after every repetition so a crash loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    pub schema_version: u32,
    pub run_id: String,
    pub cell: CellSpec,
    pub status: CellStatus,
    /// `--fake-reps`: the id of the run whose recorded repetitions this replayed — nothing
    /// here was measured. `compare` refuses it (without `--force`), the site says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,

    /// Why the cell failed / is unsupported / was interrupted.
    pub failure: Option<StageError>,
    /// The service's start-up line from its first start (the contract's type). Stored under
    /// `banner`, the name cell files have always used.
    #[serde(rename = "banner", deserialize_with = "startup_line_lenient")]
    pub startup_line: Option<StartupLine>,
    /// How the profile was applied (or why it could not be).
    pub limits: Option<AppliedLimits>,
    /// Endpoint verification on the first start (TechEmpower-style).
    pub verification: Vec<EndpointCheck>,
    /// One entry per (re)start of the service; every start is a cold-start sample.
    pub starts: Vec<StartRecord>,
    pub reps: Vec<RepResult>,
    /// Connection churn: one entry per repetition (churn cells only, instead of `reps`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub churn: Vec<ChurnRep>,
    /// Aggregates over `reps`, identical to this cell's entry in results.json.
    pub summary: CellSummary,
    /// `matrix run --flamegraph`: the extra, profiled repetition. It is not in `reps` and
    /// no summary reads it. Absent for runs without flame graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flamegraph: Option<CellFlamegraph>,
    /// Adaptive repetitions: how many the cell took and why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopping>,
}

/// The profiled repetition of a cell: run after the measured ones, with `perf record` on the
/// server during loadgen's measured window (after its warm-up), perf pinned to the
/// generator's CPUs. Its numbers carry perf's overhead, hence kept apart from `reps`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellFlamegraph {
    /// The repetition number it ran as (`repetitions + 1`); `profiled` is always true.
    pub rep: u32,
    pub profiled: bool,
    /// The profiled repetition's result, if it completed.
    pub result: Option<RepResult>,
    /// What perf recorded (paths relative to the run directory) or why it could not.
    pub profile: Option<super::Profile>,
    /// A real failure: the repetition failed, or perf crashed mid-recording.
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Every repetition ran.
    Ok,
    /// Some repetitions still to run (an interleaved run in progress, or an interrupted one).
    Partial,
    /// Service crashed, never became ready, failed verification, or the generator failed.
    Failed,
    /// The resource profile could not be applied here; nothing was run.
    Unsupported,
    /// Stopped by Ctrl-C / SIGTERM.
    Interrupted,
}

/// A stage that ended a repetition: where, why, and the service's stderr tail if it ran.
/// The one failure shape of a repetition — recorded on the cell (`failure`), returned by
/// every step of the service's life, and carried by the agent protocol.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageError {
    pub stage: Stage,
    pub reason: String,
    /// Last lines of the service's stderr.
    pub stderr_tail: Option<String>,
    /// The failure was a host's or its connection's (unreachable, connection ended), not the
    /// service's: `--resume` runs the cell again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_lost: bool,
}

/// Where a repetition ended badly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The profile could not be applied (the cell is `unsupported`).
    Limits,
    Spawn,
    Startup,
    Verify,
    Load,
    Stop,
    Interrupted,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Limits => "limits",
            Stage::Spawn => "spawn",
            Stage::Startup => "startup",
            Stage::Verify => "verify",
            Stage::Load => "load",
            Stage::Stop => "stop",
            Stage::Interrupted => "interrupted",
        }
    }
}

/// `stage: reason`, the one-line form the summary and the progress output show.
/// The name cell files and older code know the stage error by.
pub type Failure = StageError;

impl StageError {
    pub fn at(stage: Stage, reason: impl Into<String>) -> StageError {
        StageError {
            stage,
            reason: reason.into(),
            stderr_tail: None,
            host_lost: false,
        }
    }

    pub fn with_tail(mut self, tail: Option<String>) -> StageError {
        self.stderr_tail = tail;
        self
    }
}

impl std::fmt::Display for StageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.stage.as_str(), self.reason)
    }
}

/// Reads a recorded start-up line. Cell files written before the runner used ping-common's
/// type held the contract's fields as options plus the line verbatim under `raw`; for those
/// the verbatim line is parsed.
fn startup_line_lenient<'de, D>(d: D) -> Result<Option<StartupLine>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let Some(mut v) = Option::<serde_json::Value>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(raw) = v.get_mut("raw") {
        v = raw.take();
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppliedLimits {
    /// "cgroup-v1", "cgroup-v2" or "affinity-only" (no quota/memory requested).
    pub mechanism: String,
    /// Cgroup directories created for the server (removed afterwards).
    pub server_cgroups: Vec<String>,
    pub loadgen_cgroups: Vec<String>,
    /// Values read back from the cgroup files after writing them.
    pub readback: BTreeMap<String, String>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointCheck {
    pub path: String,
    pub passed: bool,
    pub status: Option<u16>,
    pub problems: Vec<String>,
    /// Response headers as received (name lower-cased).
    pub headers: BTreeMap<String, String>,
    pub body_bytes: Option<usize>,
    pub latency_us: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartRecord {
    /// Repetition this start served (1-based; 0 = the drift re-run).
    pub rep: u32,
    pub pid: u32,
    pub port: u16,
    /// exec → TCP connect accepted.
    pub connect_us: Option<u64>,
    /// exec → first `HTTP/1.1 200` on /ping. "exec" is the child's own clock read just
    /// before `execve` (after fork and its confinement); cells recorded before that clock
    /// existed started at the runner's `spawn` call (see `launch_us`).
    pub first_200_us: Option<u64>,
    /// The runner's `spawn` call → the child's exec: clone (fork in older runs) plus cgroup
    /// attach and affinity, the launch cost kept out of start-up time. None where the
    /// child's clock was not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch_us: Option<u64>,
    /// exec → first 200 of the unmeasured warm-up start of the same command that ran just
    /// before this one (`service::warm`): the colder start, kept for the record. None in
    /// runs before warm-ups and for starts on other hosts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_first_200_us: Option<u64>,
    /// VmRSS right after the first 200 and verification.
    pub idle_rss_bytes: Option<u64>,
    pub stop: Option<StopRecord>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StopRecord {
    /// "SIGTERM", or "SIGKILL" when the grace period ran out, or "already-exited".
    pub signal_sent: String,
    /// SIGTERM → reaped.
    pub stop_ms: u64,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
    /// The port accepted a fresh non-SO_REUSEPORT bind after the stop.
    pub port_free_after: bool,
    /// Descendants that had left the service's process group (setsid) and were killed at
    /// the stop: "pid 1234 (sleep)". Empty for a well-behaved service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escaped_killed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepResult {
    /// 1-based; 0 = the drift re-run at the end.
    pub rep: u32,
    pub started_unix_ms: u64,
    /// The matrix process (a run, or a `--resume` of it) that ran this repetition, by its
    /// start (Unix µs): repetition i of two cells ran side by side only when one process ran
    /// both (a cell restarted by `--resume` ran all of its after its partner's). Absent in
    /// runs before it, and in a replay of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// The generator's report, complete.
    pub report: Report,
    pub server: ServerUsage,
    pub cgroup: Option<CgroupCounters>,
    /// Generator exit code (0 = completed).
    pub loadgen_exit_code: Option<i32>,
    /// Open loop: this repetition's send lag set against the machine's timer floor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_check: Option<FloorCheck>,
    /// Multi-host cells: each generator host's own complete report; `report` is their
    /// merge (percentiles from the added histograms). Empty for single-machine cells.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorRun>,
    /// Kernel counts of the service and the generator over the window (runs before counted
    /// cost lack them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<RepCounts>,
    /// `matrix run --count-instructions`, closed-loop c1 cells: the service's user-space
    /// instructions per request under Valgrind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<InstructionCount>,
}

/// One generator host's share of a multi-host repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorRun {
    pub host: String,
    pub report: Report,
    pub loadgen_exit_code: Option<i32>,
}

/// An open-loop repetition's send lag split into how late its generator thread was woken
/// and its own part (loadgen's `wake_lag_us`, `own_lag_us`; older reports lack both), next
/// to the machine's timer wake-up lateness measured at the start of the run at the nearest
/// rate: when the generator's own part is within loadgen's limit, a "send-lag" saturation
/// verdict is the machine, not the generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloorCheck {
    pub send_lag_p99_us: u64,
    /// Timer wake-up lateness p99 of the machine at `floor_rate_per_s`.
    pub floor_p99_us: f64,
    pub floor_rate_per_s: f64,
    /// The generator thread's wake-up lateness p99 in this repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_lag_p99_us: Option<u64>,
    /// The generator's own part of the send lag, p99, and the limit it is held to (loadgen's
    /// send-lag limit for this repetition's latency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lag_p99_us: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lag_limit_us: Option<u64>,
    /// own-lag p99 ≤ its limit; for reports without the split, send-lag p99 ≤
    /// AT_FLOOR_FACTOR × floor p99 + AT_FLOOR_SLACK_US.
    pub at_floor: bool,
}

/// A send lag as loadgen split it (µs, p99).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LagSplit {
    pub own_p99_us: u64,
    pub own_limit_us: u64,
    pub wake_p99_us: u64,
}

impl FloorCheck {
    /// The split of the send lag, for reports that have it.
    pub fn split(&self) -> Option<LagSplit> {
        Some(LagSplit {
            own_p99_us: self.own_lag_p99_us?,
            own_limit_us: self.own_lag_limit_us?,
            wake_p99_us: self.wake_lag_p99_us?,
        })
    }
}

impl RepResult {
    /// Saturation reasons that stand once the machine's floor and the server's own ceiling
    /// are accounted for: a send-lag reason is dropped when the lag is at the machine's
    /// floor, a busy-thread reason when the server was as close to its CPU allowance
    /// (`server_ceiling`) — then the server set the pace, and a cheaper generator could not
    /// have raised the number.
    pub fn generator_limits(&self, limits: &ProfileLimits) -> Vec<&str> {
        let at_floor = self.floor_check.as_ref().is_some_and(|f| f.at_floor);
        let server_at_ceiling = self.server_at_ceiling(limits);
        self.report
            .verdict
            .reasons
            .iter()
            .map(String::as_str)
            .filter(|r| !(at_floor && r.starts_with(SEND_LAG_REASON)))
            .filter(|r| !(server_at_ceiling && r.starts_with(BUSY_REASON)))
            .collect()
    }

    /// loadgen flagged this repetition's send lag and the floor check found it the
    /// machine's.
    pub fn send_lag_excused(&self) -> bool {
        self.floor_check.as_ref().is_some_and(|f| f.at_floor)
            && self
                .report
                .verdict
                .reasons
                .iter()
                .any(|r| r.starts_with(SEND_LAG_REASON))
    }

    /// The generator may have limited this repetition (after the floor and ceiling checks).
    pub fn generator_saturated(&self, limits: &ProfileLimits) -> bool {
        self.report.verdict.saturated && !self.generator_limits(limits).is_empty()
    }

    /// The server's CPU over its allowance (its CFS quota, else its pinned cores), 0..1;
    /// None when either is unknown.
    pub fn server_busy_share(&self, limits: &ProfileLimits) -> Option<f64> {
        let allowance = limits
            .cpu_quota
            .or((!limits.server_cpus.is_empty()).then_some(limits.server_cpus.len() as f64))?;
        Some(self.server.cpu_cores_busy? / allowance)
    }

    /// The server used at least `SERVER_CEILING` of its allowance. Over one window the busy
    /// shares compare exactly as the CPU per request does (share = rate × µs/request ÷
    /// cores), so this is the generator's cost set against the server's.
    pub fn server_at_ceiling(&self, limits: &ProfileLimits) -> bool {
        self.server_busy_share(limits)
            .is_some_and(|s| s >= SERVER_CEILING)
    }
}

/// A server using this share of its CPU allowance was at its own ceiling (the generator's
/// busy-thread limit, loadgen/src/check.rs, is the same 90 %).
pub const SERVER_CEILING: f64 = 0.90;

/// A send lag this close to the machine's own timer lateness is the machine's: factor …
pub const AT_FLOOR_FACTOR: f64 = 1.5;
/// … plus this many µs (scheduling noise between the floor probe and the run).
pub const AT_FLOOR_SLACK_US: f64 = 50.0;

/// How loadgen's send-lag saturation reason begins (loadgen/src/check.rs).
pub const SEND_LAG_REASON: &str = "send-lag p99";
/// How loadgen's busy-thread saturation reason begins.
pub use loadgen::BUSY_REASON;

/// The server's resource use inside the measured window (sampled from /proc).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerUsage {
    pub samples: u32,
    pub sample_interval_ms: u64,
    /// utime+stime over the window, interpolated at the window edges.
    pub cpu_us: Option<f64>,
    pub cpu_us_per_request: Option<f64>,
    /// Why `cpu_us` is None: the CPU time could not be read around the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_unmeasured: Option<String>,
    /// Server CPU / window length (1.0 = one core busy).
    pub cpu_cores_busy: Option<f64>,
    pub rss_mean_bytes: Option<u64>,
    pub rss_peak_bytes: Option<u64>,
    /// VmHWM at the end of the window (peak since start).
    pub vmhwm_bytes: Option<u64>,
    pub threads: Option<u32>,
}

/// Throttling / OOM counters of the server's cgroup, deltas over the repetition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CgroupCounters {
    pub nr_periods: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub throttled_us: Option<u64>,
    pub memory_peak_bytes: Option<u64>,
    pub oom_kills: Option<u64>,
}

/// A cell's aggregate over its repetitions: the last part of its cell file, and its row in
/// results.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellSummary {
    pub key: String,
    pub service: String,
    pub scenario: String,
    pub level: String,
    pub profile: String,
    pub status: Option<CellStatus>,
    /// `--fake-reps`: the id of the run whose recorded repetitions this replayed — nothing
    /// here was measured. `compare` refuses it (without `--force`), the site says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,

    /// Measured repetitions.
    pub n: u32,
    pub requests_per_s: Option<Stat>,
    pub latency: Option<LatencySummary>,
    /// exec → first 200, over every start of this cell.
    pub startup_us: Option<Stat>,
    pub idle_rss_bytes: Option<Stat>,
    pub rss_mean_bytes: Option<Stat>,
    pub rss_peak_bytes: Option<u64>,
    pub server_cpu_us_per_request: Option<Stat>,
    pub loadgen_cpu_us_per_request: Option<Stat>,
    /// Open loop: offered rate (req/s).
    pub offered_rate_per_s: Option<f64>,
    pub generator_saturated: bool,
    pub errors: u64,
    pub timeouts: u64,
    pub cpu_throttled_periods: Option<u64>,
    pub oom_kills: Option<u64>,
    pub verification_passed: Option<bool>,
    pub deviations: Vec<String>,
    pub suspect: bool,
    pub suspect_reasons: Vec<String>,
    pub failure: Option<String>,
    /// Connection churn cells: RSS across the open/close cycles and the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<ChurnSummary>,
    /// Adaptive repetitions: how many the cell took and why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopping>,
    /// Counted cost per request (runs before it lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountedSummary>,
    /// loadgen's I/O backend over the measured repetitions (runs before it lack it):
    /// `epoll`, `io_uring (multishot)`, `io_uring (one-shot)`, or each that ran joined by
    /// " + ". A run on io_uring and one that fell back to epoll measured with different
    /// programs, so compare refuses to pair them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_io: Option<String>,
    /// Connection set-up, apart from request latency (connect → established, over TLS the
    /// handshake included): each measured repetition's median, in µs (runs before it lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_setup_p50_us: Option<Stat>,
    /// Over TLS: what the handshakes settled on — version, suite, key exchange, ALPN and the
    /// server's key — as the first measured repetition's generator saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<loadgen::report::TlsSession>,
}

/// Latency percentiles: for each percentile, the median of the per-repetition values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        #[serde(deserialize_with = "startup_line_lenient")]
        banner: Option<StartupLine>,
    }

    const LINE: &str = r#"{"service":"ping-monoio","runtime":"monoio","runtime_version":"0.2.4","http":"httparse","model":"thread-per-core","workers":2,"io_driver":"io_uring","pid":1,"listen":"127.0.0.1:1","server_header":"ping-monoio","pinned":true,"allowed_cpus":[0,1],"deviations":[{"id":"x","detail":"y"}]}"#;

    #[test]
    fn start_up_line_reads_in_both_recorded_forms() {
        let now: Holder = serde_json::from_str(&format!(r#"{{"banner":{LINE}}}"#)).unwrap();
        // The form cell files had before: contract fields as options, the line under `raw`.
        let before = format!(
            r#"{{"banner":{{"service":"ping-monoio","runtime":null,"workers":2,"deviations":[],"raw":{LINE}}}}}"#
        );
        let before: Holder = serde_json::from_str(&before).unwrap();
        let line = now.banner.unwrap();
        assert_eq!(line.io_driver, "io_uring");
        assert_eq!(line.deviations[0].id, "x");
        assert_eq!(line.burn_ns, 0, "recorded before --burn-ns: read as 0");
        assert_eq!(before.banner, Some(line));
        let none: Holder = serde_json::from_str(r#"{"banner":null}"#).unwrap();
        assert!(none.banner.is_none());
        assert!(serde_json::from_str::<Holder>(r#"{"banner":{"service":"x"}}"#).is_err());
    }
}
