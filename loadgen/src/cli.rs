//! Command-line flags (clap derive) and their translation into a `LoadSpec`. Either the
//! flags describe the load, or `--spec` supplies a serialized `LoadSpec` (the runner's way).

use std::io::Read;

use anyhow::{Context, Result, bail};
use clap::Parser;

use crate::spec::{IoChoice, LoadModel, LoadSpec, Protocol};

/// `loadgen --version`'s text after "loadgen ": the version, the method identity line
/// and the build stamp, one per line.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{}\n{}{}\n{}",
            env!("CARGO_PKG_VERSION"),
            crate::identity::LINE_PREFIX,
            IDENTITY,
            pingmatrix_stamp::STAMP
        )
    })
}

/// This binary's method identity (`crate::identity`), computed by build.rs.
pub const IDENTITY: &str = env!("PINGMATRIX_LOADGEN_IDENTITY");

#[derive(Debug, Parser)]
#[command(
    name = "loadgen",
    version,
    // `loadgen -V` is "loadgen 0.1.0"; `--version` repeats the version, then the method
    // identity (what runs are matched on: `crate::identity`) and the build stamp.
    long_version = long_version(),
    about = "Closed- and open-loop HTTP/1.1 load generator with exact accounting",
    after_help = "Durations accept 500ms, 10s, 2m or plain seconds.\n\
Exit status: 0 run completed (errors are data), 1 run could not be performed or no \
connection was ever established, 2 bad arguments."
)]
pub struct Args {
    /// Target, e.g. http://127.0.0.1:8080/ping
    #[arg(required_unless_present_any = ["spec", "floor"])]
    pub url: Option<String>,
    /// Connections (closed loop: all busy; open loop: upper bound)
    #[arg(short, long, default_value_t = 64)]
    pub connections: u32,
    /// Worker threads, each with its own event loop
    #[arg(short, long, default_value_t = 1)]
    pub threads: u32,
    /// Measured window length (default 10s unless --requests is given)
    #[arg(short, long, value_parser = parse_duration_ms)]
    pub duration: Option<u64>,
    /// Stop after this many requests in the measured window
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Open loop: total requests per second, latency measured from intended send times
    #[arg(short = 'R', long, allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// Open loop: sends due within this many µs share one wake-up (less CPU, up to this
    /// much send lag)
    #[arg(long, value_name = "US", requires = "rate", default_value_t = crate::spec::DEFAULT_COALESCE_US)]
    pub coalesce_us: u64,
    /// Closed loop: requests in flight per connection, sent as one write
    #[arg(long, default_value_t = 1)]
    pub pipeline: u32,
    /// Connection per request: send `Connection: close` and close after each response
    #[arg(long)]
    pub no_keepalive: bool,
    /// Load applied before the measured window (counters and histograms exclude it)
    #[arg(long, value_parser = parse_duration_ms, default_value = "0s")]
    pub warmup: u64,
    /// A request without a complete response after this long is a timeout
    #[arg(long, value_parser = parse_duration_ms, default_value = "2s")]
    pub timeout: u64,
    /// Status every response must have (others count as non-2xx or status_mismatch)
    #[arg(long, default_value_t = 200)]
    pub expect_status: u16,
    /// Body length every response must have (others count as body_mismatch)
    #[arg(long)]
    pub expect_body_bytes: Option<u64>,
    /// Extra request header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// I/O backend of the closed loop: auto = io_uring where allowed, else epoll (the report
    /// says which ran and why); uring where it is unavailable is an error
    #[arg(long, value_enum, default_value_t = IoChoice::Auto)]
    pub io: IoChoice,
    /// What is spoken: http/1.1 or h2c in cleartext (an http:// URL), http/1.1+tls or h2+tls
    /// over TLS 1.3 (an https:// URL; the certificate chain is not checked, as h2load does
    /// not). Over HTTP/2, --pipeline is the concurrent streams per connection (h2load -m)
    #[arg(long, value_enum, default_value_t = Protocol::Http11)]
    pub protocol: Protocol,
    /// Write the JSON report to FILE; `-` prints only the JSON on stdout
    #[arg(long, value_name = "FILE")]
    pub json: Option<String>,
    /// Read a serialized LoadSpec from FILE (`-` = stdin) instead of the load flags
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "url", "connections", "threads", "duration", "requests", "rate", "pipeline",
        "no_keepalive", "warmup", "timeout", "expect_status", "expect_body_bytes", "headers", "io", "protocol"
    ])]
    pub spec: Option<String>,
    /// Measure the machine's floor instead of loading a server: timer wake-up lateness on
    /// this thread's CPU at --floor-rates, and a loopback TCP echo round trip
    #[arg(long, conflicts_with_all = [
        "url", "spec", "connections", "threads", "duration", "requests", "rate", "pipeline",
        "no_keepalive", "warmup", "timeout", "expect_status", "expect_body_bytes", "headers", "io"
    ])]
    pub floor: bool,
    /// Timer wake-up rates for --floor, per second, comma-separated [default: 1000,5000,20000]
    #[arg(long, value_delimiter = ',')]
    pub floor_rates: Option<Vec<f64>>,
    /// Length of each --floor measurement (one per rate, plus the echo) [default: 500ms]
    #[arg(long, value_parser = parse_duration_ms)]
    pub floor_duration: Option<u64>,
}

/// `500ms`, `10s`, `2m`, `1.5s` or plain seconds → milliseconds.
pub fn parse_duration_ms(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, unit_ms) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60e3)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600e3)
    } else {
        (s, 1e3)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration (try 500ms, 10s, 2m)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{s}` is not a non-negative duration"));
    }
    Ok((v * unit_ms).round() as u64)
}

impl Args {
    /// The floor measurement these flags ask for (`--floor`). Not yet validated.
    pub fn to_floor_spec(&self) -> crate::floor::FloorSpec {
        crate::floor::FloorSpec {
            rates_per_s: (self.floor_rates.clone())
                .unwrap_or_else(|| vec![1000.0, 5000.0, 20_000.0]),
            duration_ms: self.floor_duration.unwrap_or(500),
        }
    }

    /// The spec these flags describe (or the one `--spec` points at). Not yet validated.
    pub fn to_spec(&self) -> Result<LoadSpec> {
        // (clap's `requires` cannot see whether a bool flag was given, so checked here.)
        if self.floor_rates.is_some() || self.floor_duration.is_some() {
            bail!("--floor-rates and --floor-duration apply to --floor only");
        }
        if let Some(path) = &self.spec {
            let text = if path == "-" {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .context("reading spec from stdin")?;
                s
            } else {
                std::fs::read_to_string(path).with_context(|| format!("reading spec {path}"))?
            };
            return serde_json::from_str(&text).context("parsing the LoadSpec JSON");
        }
        let url = self.url.clone().context("a URL is required")?;
        let model = match self.rate {
            Some(rate_per_s) => {
                if self.pipeline != 1 {
                    bail!("--pipeline applies to the closed loop only; drop it or drop --rate");
                }
                LoadModel::Open {
                    rate_per_s,
                    connections: self.connections,
                    coalesce_us: self.coalesce_us,
                }
            }
            None => LoadModel::Closed {
                connections: self.connections,
                pipeline: self.pipeline,
            },
        };
        let mut headers = Vec::new();
        for h in &self.headers {
            let Some((k, v)) = h.split_once(':') else {
                bail!("header `{h}` must look like \"Name: value\"");
            };
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
        let duration_ms = match (self.duration, self.requests) {
            (None, None) => Some(10_000),
            (d, _) => d,
        };
        Ok(LoadSpec {
            url,
            model,
            threads: self.threads,
            keepalive: !self.no_keepalive,
            duration_ms,
            requests: self.requests,
            warmup_ms: self.warmup,
            timeout_ms: self.timeout,
            expect_status: self.expect_status,
            expect_body_bytes: self.expect_body_bytes,
            headers,
            io: self.io,
            protocol: self.protocol,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("500ms"), Ok(500));
        assert_eq!(parse_duration_ms("1.5s"), Ok(1500));
        assert_eq!(parse_duration_ms("2m"), Ok(120_000));
        assert_eq!(parse_duration_ms("3"), Ok(3000));
        assert!(parse_duration_ms("soon").is_err());
        assert!(parse_duration_ms("-1s").is_err());
    }
}
