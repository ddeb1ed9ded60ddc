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
        /// Sends due within this many µs of each other share one wake-up; the earlier ones go
        /// up to this late, and their send lag says so. Larger trades timing for generator
        /// CPU (a wake-up costs tens of µs on a VM; `loadgen --floor`).
        #[serde(default = "default_coalesce_us")]
        coalesce_us: u64,
    },
}

/// The I/O layer under the closed loop's sockets. Everything else (accounting, timeouts,
/// reconnects, verification, the verdict) is the same code on both.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum IoChoice {
    /// io_uring where this process may use it, else epoll (the report says why).
    #[default]
    Auto,
    /// Edge-triggered epoll with one `send` and one `read` per request.
    Epoll,
    /// io_uring: sends and receives queued and submitted in one `io_uring_enter` per loop
    /// pass; receives multishot into provided buffers where the kernel has both (6.10+).
    /// Closed loop only; an error where io_uring is unavailable.
    Uring,
    /// io_uring with one-shot receives, as on kernels without multishot receive: to compare
    /// the two, and to test the path older kernels take.
    UringOneshot,
}

impl IoChoice {
    /// io_uring asked for by name (not `auto`).
    pub fn is_uring(self) -> bool {
        matches!(self, IoChoice::Uring | IoChoice::UringOneshot)
    }
}

/// The HTTP version spoken on every connection.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum,
)]
pub enum Protocol {
    /// HTTP/1.1: a closed loop's `pipeline` requests per connection are pipelined.
    #[default]
    #[serde(rename = "http/1.1")]
    #[value(name = "http/1.1")]
    Http11,
    /// HTTP/2 over cleartext with prior knowledge (h2c): a closed loop's `pipeline` requests
    /// per connection are concurrent streams (`h2load -m`). On epoll.
    #[serde(rename = "h2c")]
    #[value(name = "h2c")]
    H2c,
    /// HTTP/1.1 over TLS 1.3 (ALPN `http/1.1`); an `https://` URL. On epoll.
    #[serde(rename = "http/1.1+tls")]
    #[value(name = "http/1.1+tls")]
    Http11Tls,
    /// HTTP/2 over TLS 1.3 (ALPN `h2`), streams as h2c's; an `https://` URL. On epoll.
    #[serde(rename = "h2+tls")]
    #[value(name = "h2+tls")]
    H2Tls,
}

impl Protocol {
    /// The name specs, configs and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http11 => "http/1.1",
            Protocol::H2c => "h2c",
            Protocol::Http11Tls => "http/1.1+tls",
            Protocol::H2Tls => "h2+tls",
        }
    }

    /// HTTP/2 (h2c or over TLS): requests in flight are concurrent streams.
    pub fn is_h2(self) -> bool {
        matches!(self, Protocol::H2c | Protocol::H2Tls)
    }

    /// Over TLS: the URL is `https://`, and connection set-up includes the handshake.
    pub fn tls(self) -> bool {
        matches!(self, Protocol::Http11Tls | Protocol::H2Tls)
    }

    /// The URL scheme it is reached by: "https" over TLS, else "http".
    pub fn scheme(self) -> &'static str {
        if self.tls() { "https" } else { "http" }
    }

    /// The ALPN protocol asked for over TLS (the handshake must settle on it).
    pub fn alpn(self) -> Option<&'static [u8]> {
        match self {
            Protocol::Http11Tls => Some(b"http/1.1"),
            Protocol::H2Tls => Some(b"h2"),
            Protocol::Http11 | Protocol::H2c => None,
        }
    }

    /// HTTP/1.1 (what a spec without the field ran).
    pub fn is_http11(&self) -> bool {
        *self == Protocol::Http11
    }
}

/// Default wake-up coalescing: well under a timer wake-up's own lateness on a VM, so on-time
/// sends stay on time.
pub const DEFAULT_COALESCE_US: u64 = 20;
/// Longest coalescing accepted (10 ms): beyond it a "rate" is a burst every so often.
pub const MAX_COALESCE_US: u64 = 10_000;

fn default_coalesce_us() -> u64 {
    DEFAULT_COALESCE_US
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
    /// I/O backend (specs older than the choice ran epoll and read as `auto`; their reports'
    /// `generator.io` is absent).
    #[serde(default)]
    pub io: IoChoice,
    /// HTTP/1.1 (absent from specs and reports written before HTTP/2) or h2c.
    #[serde(default, skip_serializing_if = "Protocol::is_http11")]
    pub protocol: Protocol,
}

/// Longest measured window or warm-up accepted (24 h): longer is not a benchmark run, and
/// nanosecond arithmetic on it stays far from overflow.
pub const MAX_DURATION_MS: u64 = 24 * 3_600_000;
/// Histogram range of every latency the report records: 1 µs .. 1 h. Defined here, not in
/// the recorder, because the longest timeout a spec may ask for follows from it (and the
/// recorder already depends on the report, which embeds the spec).
pub const HIST_MAX_US: u64 = 3_600_000_000;
/// Longest timeout (1 h): the latency histograms end there.
pub const MAX_TIMEOUT_MS: u64 = HIST_MAX_US / 1_000;
/// Open-loop rate one thread can be asked for. One send costs a syscall (~1 µs or more), so
/// a thread cannot send faster; a higher target would only measure the generator.
pub const MAX_RATE_PER_THREAD: f64 = 1_000_000.0;
/// Slowest open-loop rate (one request per 1000 s).
pub const MIN_RATE_PER_S: f64 = 0.001;
pub const MAX_THREADS: u32 = 1024;
/// File descriptors kept free for everything that is not a connection (stdio, epoll, ...).
pub const FD_RESERVE: u64 = 64;

/// What this host allows, for the checks a spec cannot make on its own. `None`: unknown
/// (then not checked).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostLimits {
    /// Hard `RLIMIT_NOFILE` (loadgen raises its soft limit to it).
    pub open_files: Option<u64>,
    /// Size of the ephemeral port range: client connections to one address and port.
    pub ephemeral_ports: Option<u64>,
}

impl HostLimits {
    pub fn read() -> Self {
        Self {
            open_files: crate::sys::proc::nofile_hard_limit(),
            ephemeral_ports: crate::sys::proc::ephemeral_ports(),
        }
    }
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
    #[error(
        "rate {rate} req/s is more than {threads} thread(s) can send (at most {max} req/s per \
         thread); lower --rate or add --threads"
    )]
    RateTooHigh { rate: f64, threads: u32, max: f64 },
    #[error("rate {0} req/s is below the minimum of {MIN_RATE_PER_S} req/s")]
    RateTooLow(f64),
    #[error("coalescing of {0} µs is longer than the maximum of {MAX_COALESCE_US} µs")]
    Coalesce(u64),
    #[error("threads must be at most {MAX_THREADS} (got {0})")]
    TooManyThreads(u32),
    #[error("{connections} connections exceed this host's {what} ({limit}{hint})")]
    TooManyConnections {
        connections: u32,
        what: &'static str,
        limit: u64,
        hint: &'static str,
    },
    #[error("{what} of {ms} ms is longer than the maximum of {max_ms} ms")]
    TooLong {
        what: &'static str,
        ms: u64,
        max_ms: u64,
    },
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
    #[error(
        "--io uring and uring-oneshot drive the closed loop only; the open loop runs on epoll (use --io auto or epoll)"
    )]
    UringOpenLoop,
    #[error("--io uring: io_uring is unavailable here ({0}); use --io epoll or auto")]
    UringUnavailable(String),
    #[error(
        "{0} runs on epoll; --io uring and uring-oneshot speak cleartext HTTP/1.1 only (use --io auto or epoll)"
    )]
    UringProtocol(&'static str),
    #[error("{0} keeps its connections open; --no-keepalive is cleartext HTTP/1.1's")]
    H2WithoutKeepalive(&'static str),
    #[error(
        "URL `{url}` does not fit --protocol {protocol}: https:// is for http/1.1+tls and h2+tls, http:// for http/1.1 and h2c"
    )]
    SchemeProtocol { url: String, protocol: &'static str },
    #[error("{0}")]
    H2Request(String),
}

impl HostLimits {
    /// Every connection needs a file descriptor and, to one target, its own local port.
    fn check(&self, connections: u32) -> Result<(), SpecError> {
        let too_many = |what, limit, hint| SpecError::TooManyConnections {
            connections,
            what,
            limit,
            hint,
        };
        if let Some(n) = self.open_files
            && connections as u64 + FD_RESERVE > n
        {
            let usable = n.saturating_sub(FD_RESERVE);
            return Err(too_many(
                "open-file limit",
                n,
                if usable > 0 {
                    " less 64 kept for other files; raise `ulimit -n` or use fewer connections"
                } else {
                    "; raise `ulimit -n`"
                },
            ));
        }
        if let Some(n) = self.ephemeral_ports
            && connections as u64 > n
        {
            return Err(too_many(
                "ephemeral port range",
                n,
                " ports in net.ipv4.ip_local_port_range",
            ));
        }
        Ok(())
    }
}

impl LoadSpec {
    /// Check everything that can be checked without touching the network, including this
    /// host's fd limit and ephemeral port range.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_for(&HostLimits::read())
    }

    /// `validate` against given host limits.
    pub fn validate_for(&self, host: &HostLimits) -> Result<(), SpecError> {
        crate::http::target::split(&self.url)?;
        let connections = match self.model {
            LoadModel::Closed {
                connections,
                pipeline,
            } => {
                if !(1..=1024).contains(&pipeline) {
                    return Err(SpecError::Pipeline(pipeline));
                }
                if pipeline > 1 && !self.keepalive && self.protocol.is_http11() {
                    return Err(SpecError::PipelineWithoutKeepalive);
                }
                connections
            }
            LoadModel::Open {
                rate_per_s,
                connections,
                coalesce_us,
            } => {
                if coalesce_us > MAX_COALESCE_US {
                    return Err(SpecError::Coalesce(coalesce_us));
                }
                if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
                    return Err(SpecError::Rate(rate_per_s));
                }
                if rate_per_s < MIN_RATE_PER_S {
                    return Err(SpecError::RateTooLow(rate_per_s));
                }
                let max = MAX_RATE_PER_THREAD * self.threads.max(1) as f64;
                if rate_per_s > max {
                    return Err(SpecError::RateTooHigh {
                        rate: rate_per_s,
                        threads: self.threads,
                        max: MAX_RATE_PER_THREAD,
                    });
                }
                connections
            }
        };
        if connections == 0 {
            return Err(SpecError::NoConnections);
        }
        let https = crate::http::target::split(&self.url)?.4;
        if https != self.protocol.tls() {
            return Err(SpecError::SchemeProtocol {
                url: self.url.clone(),
                protocol: self.protocol.name(),
            });
        }
        if !self.protocol.is_http11() && self.io.is_uring() {
            return Err(SpecError::UringProtocol(self.protocol.name()));
        }
        if self.protocol.is_h2() {
            if !self.keepalive {
                return Err(SpecError::H2WithoutKeepalive(self.protocol.name()));
            }
            let (_, _, authority, path, _) = crate::http::target::split(&self.url)?;
            crate::http::h2::request_block(&path, &authority, &self.headers)
                .map_err(SpecError::H2Request)?;
        }
        if self.threads == 0 {
            return Err(SpecError::NoThreads);
        }
        if self.threads > MAX_THREADS {
            return Err(SpecError::TooManyThreads(self.threads));
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
        for (what, ms, max_ms) in [
            ("duration", self.duration_ms.unwrap_or(0), MAX_DURATION_MS),
            ("warm-up", self.warmup_ms, MAX_DURATION_MS),
            ("timeout", self.timeout_ms, MAX_TIMEOUT_MS),
        ] {
            if ms > max_ms {
                return Err(SpecError::TooLong { what, ms, max_ms });
            }
        }
        host.check(connections)?;
        if !(100..=599).contains(&self.expect_status) {
            return Err(SpecError::Status(self.expect_status));
        }
        if self.io.is_uring() && matches!(self.model, LoadModel::Open { .. }) {
            return Err(SpecError::UringOpenLoop);
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 1-thread, 1 s spec on `model` (no server behind its URL).
    pub(crate) fn spec(model: LoadModel) -> LoadSpec {
        LoadSpec {
            url: "http://127.0.0.1:1/".into(),
            model,
            threads: 1,
            keepalive: true,
            duration_ms: Some(1000),
            requests: None,
            warmup_ms: 0,
            timeout_ms: 2000,
            expect_status: 200,
            expect_body_bytes: None,
            headers: Vec::new(),
            io: IoChoice::Auto,
            protocol: Default::default(),
        }
    }

    const HOST: HostLimits = HostLimits {
        open_files: Some(1024),
        ephemeral_ports: Some(500),
    };

    #[test]
    fn io_uring_asked_for_by_name_refuses_the_open_loop() {
        let open = LoadModel::Open {
            rate_per_s: 10.0,
            connections: 1,
            coalesce_us: 20,
        };
        for io in [IoChoice::Uring, IoChoice::UringOneshot] {
            let s = LoadSpec {
                io,
                ..spec(open.clone())
            };
            assert!(matches!(
                s.validate_for(&HOST),
                Err(SpecError::UringOpenLoop)
            ));
        }
        for io in [IoChoice::Auto, IoChoice::Epoll] {
            let s = LoadSpec {
                io,
                ..spec(open.clone())
            };
            assert!(s.validate_for(&HOST).is_ok(), "{io:?}");
        }
    }

    #[test]
    fn connections_must_fit_the_fd_limit_and_the_port_range() {
        let closed = |connections| {
            spec(LoadModel::Closed {
                connections,
                pipeline: 1,
            })
        };
        assert!(closed(500).validate_for(&HOST).is_ok());
        let e = closed(501).validate_for(&HOST).unwrap_err();
        assert!(e.to_string().contains("ephemeral port range"), "{e}");
        let host = HostLimits {
            open_files: Some(200),
            ..HOST
        };
        assert!(closed(136).validate_for(&host).is_ok());
        let e = closed(137).validate_for(&host).unwrap_err();
        assert!(e.to_string().contains("ulimit -n"), "{e}");
        let unknown = HostLimits {
            open_files: None,
            ephemeral_ports: None,
        };
        assert!(closed(100_000).validate_for(&unknown).is_ok());
    }

    #[test]
    fn durations_rates_and_timeouts_are_bounded() {
        let open = |rate_per_s| {
            spec(LoadModel::Open {
                rate_per_s,
                connections: 8,
                coalesce_us: DEFAULT_COALESCE_US,
            })
        };
        assert!(open(1e6).validate_for(&HOST).is_ok());
        assert!(matches!(
            open(1e10).validate_for(&HOST),
            Err(SpecError::RateTooHigh { .. })
        ));
        assert!(matches!(
            open(1e-4).validate_for(&HOST),
            Err(SpecError::RateTooLow(_))
        ));
        let coalescing = |coalesce_us| {
            spec(LoadModel::Open {
                rate_per_s: 10.0,
                connections: 8,
                coalesce_us,
            })
        };
        assert!(coalescing(MAX_COALESCE_US).validate_for(&HOST).is_ok());
        assert_eq!(
            coalescing(MAX_COALESCE_US + 1).validate_for(&HOST),
            Err(SpecError::Coalesce(MAX_COALESCE_US + 1))
        );
        let mut s = open(10.0);
        s.duration_ms = Some(9_223_372_036_854_775_000);
        assert!(matches!(
            s.validate_for(&HOST),
            Err(SpecError::TooLong {
                what: "duration",
                ..
            })
        ));
        let mut s = open(10.0);
        s.warmup_ms = MAX_DURATION_MS + 1;
        assert!(s.validate_for(&HOST).is_err());
        let mut s = open(10.0);
        s.timeout_ms = MAX_TIMEOUT_MS + 1;
        assert!(matches!(
            s.validate_for(&HOST),
            Err(SpecError::TooLong {
                what: "timeout",
                ..
            })
        ));
    }
}
