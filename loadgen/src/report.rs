//! What a run produced: the versioned, self-describing report (JSON schema in
//! `loadgen/schema.json`). Units are in every field name.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::spec::{IoChoice, LoadSpec};

/// Bumped on any incompatible change to `Report`'s serialized form.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON Schema of `Report`, generated from these types (the committed
/// `loadgen/schema.json` must equal it; `tests/it/schema.rs` says how to regenerate).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Report);
    serde_json::to_string_pretty(&schema).expect("a schema always serializes") + "\n"
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// One load run: the spec as run, latency percentiles (µs), exact counts, a per-second
/// timeline, the generator's own CPU cost and a saturation verdict. Units are in field names.
pub struct Report {
    pub schema_version: u32,
    pub loadgen_version: String,
    /// The spec exactly as run.
    pub spec: LoadSpec,
    /// Wall-clock start of the measured window (Unix epoch, ms) — for humans only;
    /// all durations come from the monotonic clock.
    pub started_unix_ms: u64,
    /// Length of the measured window, monotonic.
    pub window_s: f64,
    /// Responses completed inside the window (ok + non-2xx + mismatches) / `window_s`.
    pub requests_per_s: f64,
    /// Only responses that passed validation (`counts.ok`) / `window_s`: what a server that
    /// answers fast but wrong cannot inflate.
    #[serde(default)]
    pub ok_per_s: f64,
    /// Closed loop: completion − actual send. Open loop: completion − intended send.
    pub latency_us: Percentiles,
    /// Completion − actual send (open loop; equals `latency_us` for closed loop).
    pub service_time_us: Percentiles,
    /// Actual send − intended send (open loop only), including time spent waiting for a
    /// free connection (see `counts.queued`).
    pub send_lag_us: Option<Percentiles>,
    /// Send lag of the requests that found a free connection when due: the generator's
    /// own timer and loop lateness (open loop only). The saturation verdict uses this.
    #[serde(default)]
    pub schedule_lag_us: Option<Percentiles>,
    /// Of each schedule lag, the part after the time the generator thread had asked to be
    /// running again (its sleep's deadline, or the request's intended time if later) until it
    /// woke: the lateness of its wake-ups, whatever the cause (timer, another task on its CPU,
    /// the hypervisor). What a generator with no processing cost would have shown under the
    /// same wake-ups — the machine's floor in this very run. The rest of the lag is the
    /// generator's own (open loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_lag_us: Option<Percentiles>,
    /// The rest of each schedule lag (schedule lag − wake lag, per request): time the
    /// generator was running but busy with other sends, responses or bookkeeping before
    /// this send. Where this is high the generator itself fell behind (open loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lag_us: Option<Percentiles>,
    pub counts: Counts,
    pub connections: ConnectionCounts,
    /// Connection set-up, apart from request latency: connect started → TCP established and,
    /// over TLS, the handshake finished (µs), every connection of the run (warm-up and
    /// pre-connect included). Absent from reports older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_setup: Option<Setup>,
    /// Over TLS: what the handshakes settled on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSession>,
    /// Responses by status code.
    pub status_counts: BTreeMap<u16, u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// One entry per second of the measured window.
    pub timeline: Vec<Interval>,
    pub generator: Generator,
    pub verdict: Saturation,
    /// Merged latency histogram (same values as `latency_us`), HDR V2 + deflate, base64,
    /// values in µs — re-mergeable across runs.
    pub latency_hdr_v2_b64: String,
    /// Open loop: the service-time, send-lag and schedule-lag histograms behind the
    /// percentiles above, encoded like `latency_hdr_v2_b64`, so reports of several
    /// generators merge exactly. Absent for the closed loop (service time is latency there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop_hdr_v2_b64: Option<OpenLoopHistograms>,
    /// Things a reader must know about this run that are not generator saturation: refused
    /// connections, timeouts, errors, an early stop. Empty for a clean run.
    #[serde(default)]
    pub problems: Vec<String>,
}

/// Connection set-up times and their histogram (HDR V2 + deflate, base64, µs: merges across
/// generators like the latency's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    pub us: Percentiles,
    pub hdr_v2_b64: String,
}

/// A TLS handshake's outcome, as the client saw it (every connection of a run asks the same
/// and is checked to get the same protocol; the first one's is recorded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsSession {
    /// e.g. "TLSv1_3".
    pub version: String,
    /// e.g. "TLS13_AES_256_GCM_SHA384".
    pub suite: String,
    /// e.g. "X25519".
    pub key_exchange: String,
    /// The ALPN protocol chosen ("h2", "http/1.1").
    pub alpn: String,
    /// The server's key as its handshake signature shows it, e.g. "RSA-2048" (an ECDSA key
    /// makes handshakes many times cheaper).
    pub server_key: String,
    /// Whether the server's certificate chain was checked (loadgen: never; the handshake's
    /// signature always is).
    pub chain_verified: bool,
}

/// An open-loop run's other histograms (HDR V2 + deflate, base64, values in µs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLoopHistograms {
    pub service_time: String,
    pub send_lag: String,
    pub schedule_lag: String,
    /// `Report::wake_lag_us`'s histogram (absent from reports older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wake_lag: Option<String>,
    /// `Report::own_lag_us`'s histogram (absent from reports older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lag: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// A distribution, in the unit named by the field that holds it (µs everywhere here).
pub struct Percentiles {
    /// Values recorded.
    pub samples: u64,
    pub mean: f64,
    pub stdev: f64,
    pub min: u64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub p9999: u64,
    pub max: u64,
}

/// `sent == ok + non_2xx + errors.total() + timeouts + in_flight_at_end` always holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    pub sent: u64,
    pub ok: u64,
    pub non_2xx: u64,
    pub errors: ErrorCounts,
    pub timeouts: u64,
    pub in_flight_at_end: u64,
    /// Open loop: requests that were due but waited for a free connection (still sent later,
    /// latency counted from the intended time).
    pub queued: u64,
    /// Open loop: requests due but never sent before the window closed.
    pub backlog_at_end: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorCounts {
    /// Closed loop: requests issued on a (re)connection that then failed to open. (The open
    /// loop only sends on open connections; its failed connects are in
    /// `ConnectionCounts::failed` and its waiting requests in `queued`/`backlog_at_end`.)
    pub connect: u64,
    /// The server closed, or reading failed, with these requests unanswered.
    pub read: u64,
    /// Sending failed (other than a reset).
    pub write: u64,
    /// The response could not be framed (bad head, bad length, bad chunks, head > 16 KiB).
    pub parse: u64,
    /// ECONNRESET / EPIPE while reading or writing.
    pub reset: u64,
    /// A 2xx status other than the expected one.
    pub status_mismatch: u64,
    pub body_mismatch: u64,
}

/// Counts of several threads or hosts add field by field.
impl std::ops::AddAssign<&Counts> for Counts {
    fn add_assign(&mut self, b: &Counts) {
        self.sent += b.sent;
        self.ok += b.ok;
        self.non_2xx += b.non_2xx;
        self.errors += &b.errors;
        self.timeouts += b.timeouts;
        self.in_flight_at_end += b.in_flight_at_end;
        self.queued += b.queued;
        self.backlog_at_end += b.backlog_at_end;
    }
}

impl std::ops::AddAssign<&ErrorCounts> for ErrorCounts {
    fn add_assign(&mut self, f: &ErrorCounts) {
        self.connect += f.connect;
        self.read += f.read;
        self.write += f.write;
        self.parse += f.parse;
        self.reset += f.reset;
        self.status_mismatch += f.status_mismatch;
        self.body_mismatch += f.body_mismatch;
    }
}

impl std::ops::AddAssign<&ConnectionCounts> for ConnectionCounts {
    fn add_assign(&mut self, o: &ConnectionCounts) {
        self.requested += o.requested;
        self.established += o.established;
        self.reconnected += o.reconnected;
        self.failed += o.failed;
        self.protocol_violations += o.protocol_violations;
    }
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect
            + self.read
            + self.write
            + self.parse
            + self.reset
            + self.status_mismatch
            + self.body_mismatch
    }
}

/// Over the whole run, warm-up included (connections are opened before the window).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionCounts {
    /// Connect attempts.
    pub requested: u64,
    pub established: u64,
    /// Established connections that replaced an earlier one on the same slot (after a
    /// close, error or timeout; every request with keep-alive off).
    pub reconnected: u64,
    /// Connect attempts that failed or did not complete within the timeout.
    pub failed: u64,
    /// Connections dropped because the server sent bytes no request asked for.
    #[serde(default)]
    pub protocol_violations: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// One second of the measured window (the last one may be shorter).
pub struct Interval {
    /// Seconds since the start of the measured window (interval start).
    pub t_s: u32,
    pub responses: u64,
    pub requests_per_s: f64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub errors: u64,
}

/// The generator's own cost, so a reader can tell whether it, not the server, was the limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Generator {
    pub threads: u32,
    /// Sum over worker threads of their CPU time across the measured window (exact thread
    /// CPU clock, split into user and system time in getrusage's proportions).
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// (cpu_user_s + cpu_sys_s) * 1e6 / responses completed in the window.
    pub cpu_us_per_request: f64,
    /// Busiest thread's CPU time / its measured span (the window, up to the thread's stop;
    /// 0..1), spin-waits included. CPU time from `CLOCK_THREAD_CPUTIME_ID`.
    pub busiest_thread_busy: f64,
    /// Each worker thread's CPU time / its measured span (0..1).
    #[serde(default)]
    pub per_thread_busy: Vec<f64>,
    /// Each worker thread's share of the window spent spin-waiting for a send due within
    /// 20 µs (open loop; 0..1). Part of `per_thread_busy`, but chosen for timing precision,
    /// so the saturation verdict does not count it.
    #[serde(default)]
    pub per_thread_spin_wait: Vec<f64>,
    /// Times the worker threads slept and woke inside the window, per request sent: what a
    /// request costs in wake-ups (open loop: below 1 when sends due together share one).
    #[serde(default)]
    pub wakeups_per_request: f64,
    /// CPUs the generator was allowed to run on (affinity mask).
    pub allowed_cpus: Vec<u32>,
    /// The I/O backend the worker threads ran, and why (absent from reports older than it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoUsed>,
    /// The worker threads' own counted cost over the window (absent from older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<OwnCost>,
}

/// An I/O backend that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IoBackend {
    Epoll,
    Uring,
}

/// How io_uring receives: armed once per connection into provided buffers, or queued anew
/// into the connection's buffer after each completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Receive {
    /// `IORING_RECV_MULTISHOT` into a provided-buffer ring (kernel 6.10+ vouches for both).
    Multishot,
    /// One receive per completion, waiting for data first (`IORING_RECVSEND_POLL_FIRST`).
    OneShot,
}

/// Which backend ran, what was asked for, and why that one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IoUsed {
    pub requested: IoChoice,
    pub backend: IoBackend,
    /// Why this backend: the choice, or why io_uring could not be used (e.g. refused by
    /// sysctl `kernel.io_uring_disabled` or a seccomp filter).
    pub reason: String,
    /// On io_uring: how it receives, and why (absent on epoll, and in reports before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive: Option<ReceiveUsed>,
}

/// The receive mode io_uring ran with, and why that one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiveUsed {
    pub mode: Receive,
    pub reason: String,
}

/// What the worker threads asked of the kernel over the measured window, counted: syscalls
/// (every one loadgen's own `sys` layer makes; vDSO clock reads are not syscalls) and the
/// threads' `getrusage(RUSAGE_THREAD)` context switches and page faults. Per-request figures
/// divide by responses completed in the window, like `cpu_us_per_request`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnCost {
    pub syscalls: u64,
    pub syscalls_per_request: f64,
    pub voluntary_context_switches: u64,
    pub involuntary_context_switches: u64,
    /// (voluntary + involuntary) / responses.
    pub context_switches_per_request: f64,
    pub minor_faults: u64,
    pub major_faults: u64,
}

impl OwnCost {
    /// Totals of several threads or hosts, with per-request figures over `responses`.
    pub fn sum<'a>(parts: impl IntoIterator<Item = &'a OwnCost>, responses: u64) -> OwnCost {
        let mut c = OwnCost::default();
        for p in parts {
            c.syscalls += p.syscalls;
            c.voluntary_context_switches += p.voluntary_context_switches;
            c.involuntary_context_switches += p.involuntary_context_switches;
            c.minor_faults += p.minor_faults;
            c.major_faults += p.major_faults;
        }
        let per = |n: u64| {
            if responses > 0 {
                n as f64 / responses as f64
            } else {
                0.0
            }
        };
        c.syscalls_per_request = per(c.syscalls);
        c.context_switches_per_request =
            per(c.voluntary_context_switches + c.involuntary_context_switches);
        c
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
/// The self-check: whether the generator itself may have limited the run (JSON: `verdict`).
pub struct Saturation {
    /// The generator may have been the bottleneck; numbers are a lower bound on the server.
    pub saturated: bool,
    pub reasons: Vec<String>,
}
