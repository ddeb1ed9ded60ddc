//! What to run: the load specification shared by the `loadgen` binary and the matrix runner.
//!
//! This is the one definition of a load; the runner builds a `LoadSpec` per cell and the
//! report echoes it back verbatim, so every number carries the exact load that produced it.

use serde::{Deserialize, Serialize};

/// How requests are offered to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LoadModel {
    /// Fixed connections, each sending its next request (or pipelined batch) only after the
    /// previous one completed. Measures the throughput ceiling; latency is service time.
    Closed {
        connections: u32,
        /// Requests in flight per connection, sent as one write. 1 = no pipelining.
        pipeline: u32,
    },
    /// Constant arrival rate: request k is due at `t0 + k / rate_per_s` whatever the server
    /// does. Latency is measured from that intended send time (no coordinated omission).
    Open {
        rate_per_s: f64,
        /// Upper bound on connections used to carry the schedule.
        connections: u32,
    },
}

/// A complete, serializable description of one load run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadSpec {
    /// `http://host:port/path?query` (loopback only in this project's tests).
    pub url: String,
    pub model: LoadModel,
    /// Generator threads, each with its own event loop and share of connections.
    pub threads: u32,
    /// false: every request carries `Connection: close` and the client closes after the
    /// response (connection-per-request).
    pub keepalive: bool,
    /// Measured window length; `None` when bounded by `requests` alone.
    pub duration_ms: Option<u64>,
    /// Stop after this many requests were sent in the measured window.
    pub requests: Option<u64>,
    /// Load applied before the measured window; counters and histograms reset together at
    /// its end.
    pub warmup_ms: u64,
    /// A request with no complete response after this long is a timeout.
    pub timeout_ms: u64,
    /// Responses with another status are counted as errors (`status_mismatch`).
    pub expect_status: u16,
    /// When set, responses whose body length differs are counted as errors (`body_mismatch`).
    pub expect_body_bytes: Option<u64>,
    /// Extra request headers, `(name, value)`.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}
