//! What to run: the load specification shared by the `loadgen` binary and the matrix runner.
//!
//! This is the one definition of a load; the runner builds a `LoadSpec` per cell and the
//! report echoes it back verbatim, so every number carries the exact load that produced it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How requests are offered to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
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

/// Why a spec cannot be run. Every variant is a user error (the binary exits 2).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error(transparent)]
    Url(#[from] crate::http::target::UrlError),
    #[error("connections must be at least 1")]
    NoConnections,
    #[error("threads must be at least 1")]
    NoThreads,
    #[error(
        "threads ({threads}) exceed connections ({connections}); every thread needs a connection"
    )]
    ThreadsExceedConnections { threads: u32, connections: u32 },
    #[error("pipeline depth must be between 1 and 1024 (got {0})")]
    Pipeline(u32),
    #[error("pipelining needs keep-alive; use --pipeline 1 with --no-keepalive")]
    PipelineWithoutKeepalive,
    #[error("rate must be a positive, finite number of requests per second (got {0})")]
    Rate(f64),
    #[error("give a duration and/or a request count")]
    NoBound,
    #[error("duration must be positive")]
    ZeroDuration,
    #[error("request count must be positive")]
    ZeroRequests,
    #[error("timeout must be positive")]
    ZeroTimeout,
    #[error("expected status must be 100..=599 (got {0})")]
    Status(u16),
    #[error("invalid header `{0}`: names must be tokens, values must not contain CR/LF")]
    Header(String),
}

impl LoadSpec {
    /// Check everything that can be checked without touching the network.
    pub fn validate(&self) -> Result<(), SpecError> {
        crate::http::target::split(&self.url)?;
        let connections = match self.model {
            LoadModel::Closed {
                connections,
                pipeline,
            } => {
                if !(1..=1024).contains(&pipeline) {
                    return Err(SpecError::Pipeline(pipeline));
                }
                if pipeline > 1 && !self.keepalive {
                    return Err(SpecError::PipelineWithoutKeepalive);
                }
                connections
            }
            LoadModel::Open {
                rate_per_s,
                connections,
            } => {
                if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
                    return Err(SpecError::Rate(rate_per_s));
                }
                connections
            }
        };
        if connections == 0 {
            return Err(SpecError::NoConnections);
        }
        if self.threads == 0 {
            return Err(SpecError::NoThreads);
        }
        if self.threads > connections {
            return Err(SpecError::ThreadsExceedConnections {
                threads: self.threads,
                connections,
            });
        }
        match (self.duration_ms, self.requests) {
            (None, None) => return Err(SpecError::NoBound),
            (Some(0), _) => return Err(SpecError::ZeroDuration),
            (_, Some(0)) => return Err(SpecError::ZeroRequests),
            _ => {}
        }
        if self.timeout_ms == 0 {
            return Err(SpecError::ZeroTimeout);
        }
        if !(100..=599).contains(&self.expect_status) {
            return Err(SpecError::Status(self.expect_status));
        }
        for (k, v) in &self.headers {
            let token = !k.is_empty()
                && k.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !token || v.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(SpecError::Header(k.clone()));
            }
        }
        Ok(())
    }

    /// Connections requested by the model.
    pub fn connections(&self) -> u32 {
        match self.model {
            LoadModel::Closed { connections, .. } | LoadModel::Open { connections, .. } => {
                connections
            }
        }
    }

    /// Requests per batch (closed loop pipelining); 1 for open loop.
    pub fn pipeline(&self) -> u32 {
        match self.model {
            LoadModel::Closed { pipeline, .. } => pipeline.max(1),
            LoadModel::Open { .. } => 1,
        }
    }
}
