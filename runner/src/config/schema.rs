//! The matrix file (`matrix.toml`) as written by a human: serde types with
//! `deny_unknown_fields` everywhere, and `Spanned` on every field whose meaning is checked
//! after parsing, so its errors name the line and column of the value itself.

use serde::{Deserialize, Serialize};
use toml::Spanned;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub quick: Option<Quick>,
    #[serde(default)]
    pub services: Vec<Service>,
    #[serde(default)]
    pub scenarios: Vec<Scenario>,
    #[serde(default)]
    pub profiles: Vec<Profile>,
    #[serde(default)]
    pub calibration: Option<Calibration>,
    /// Other machines, driven over SSH (`profiles[].server_host` / `loadgen_hosts`).
    #[serde(default)]
    pub hosts: Vec<HostEntry>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Defaults {
    pub warmup_ms: Spanned<u64>,
    pub duration_ms: Spanned<u64>,
    pub repetitions: Spanned<u32>,
    /// Pause after each repetition (server stopped) so sockets in TIME_WAIT and the CPU settle.
    pub cooldown_ms: Spanned<u64>,
    pub startup_timeout_ms: Spanned<u64>,
    /// SIGTERM → SIGKILL grace.
    pub stop_grace_ms: Spanned<u64>,
    pub request_timeout_ms: Spanned<u64>,
    pub loadgen_threads: Spanned<u32>,
    /// The load generator binary (name on PATH / next to `matrix`, or a path).
    pub loadgen: Spanned<String>,
    /// Cell re-run through the run to measure drift: "service/scenario/level/profile";
    /// default = the first cell of the plan.
    pub reference: Option<Spanned<String>>,
    /// Re-runs of the reference cell, spread evenly through the run (the last at its end).
    pub drift_points: Spanned<u32>,
    /// Service every other is judged against (ratio with its 95 % interval); default: the
    /// first service.
    pub baseline: Option<Spanned<String>>,
    /// Adaptive repetitions: repeat a cell until the 95 % CI half-width of its primary
    /// metric (closed loop req/s, open loop CPU/request) is at most this many percent.
    pub target_ci_pct: Option<Spanned<f64>>,
    /// With `target_ci_pct` or `--target-ci`: the most repetitions a cell gets (its time
    /// cap); default 10.
    pub max_repetitions: Option<Spanned<u32>>,
    /// Count syscalls per request after each repetition, in a window of their own (perf's
    /// tracepoint; about 2 s a repetition); default true. The /proc counts are taken either
    /// way.
    pub count_syscalls: Spanned<bool>,
}

/// A value the file did not give: it has no place in the file (span 0..0, reported as 1:1).
fn unwritten<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            warmup_ms: unwritten(1000),
            duration_ms: unwritten(3000),
            repetitions: unwritten(3),
            cooldown_ms: unwritten(200),
            startup_timeout_ms: unwritten(10_000),
            stop_grace_ms: unwritten(2000),
            request_timeout_ms: unwritten(2000),
            loadgen_threads: unwritten(1),
            loadgen: unwritten("loadgen".to_string()),
            reference: None,
            drift_points: unwritten(4),
            baseline: None,
            target_ci_pct: None,
            max_repetitions: None,
            count_syscalls: unwritten(true),
        }
    }
}

/// `--quick`: a representative subset with short windows.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Cells as "scenario/level/profile" (every service runs each).
    pub cells: Spanned<Vec<String>>,
    pub warmup_ms: Option<Spanned<u64>>,
    pub duration_ms: Option<Spanned<u64>>,
    pub repetitions: Option<Spanned<u32>>,
    pub cooldown_ms: Option<Spanned<u64>>,
    /// Whether the quick run counts syscalls (default: as `defaults.count_syscalls`); the
    /// exact count adds about 3 s to every repetition.
    pub count_syscalls: Option<Spanned<bool>>,
}

/// `[calibration]`: one service run as two identical arms, A B A B, with the run's windows
/// and repetitions, to measure what this machine can tell apart.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Default: the baseline service.
    pub service: Option<Spanned<String>>,
    /// Cells as "scenario/level/profile".
    pub cells: Spanned<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Service {
    pub name: Spanned<String>,
    /// A service of this suite (it obeys `services/README.md`); or give `command`.
    pub binary: Option<Spanned<String>>,
    #[serde(default)]
    pub args: Vec<String>,
    /// A server the suite did not write: program and arguments, with `{addr}`, `{port}`,
    /// `{host}` and `{workers}` replaced per start (`crate::service::external`).
    pub command: Option<Spanned<Vec<String>>>,
    /// The same service built at another revision or with pinned dependency versions; each
    /// runs as `<name>@<variant>` beside it (`variant`).
    #[serde(default)]
    pub variants: Vec<Variant>,
}

/// `[[services.variants]]`: one more build of the service's binary.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: Spanned<String>,
    /// A git revision of the pingmatrix checkout the variant is built from (default "HEAD":
    /// its last commit, not the working tree).
    pub rev: Option<Spanned<String>>,
    /// That checkout, relative to the matrix file (default: the matrix file's own checkout
    /// if it is pingmatrix's, else the checkout `matrix` was built in).
    pub repo: Option<Spanned<String>>,
    /// Workspace dependencies pinned to one version each, e.g. `{ tokio = "1.51.0" }`.
    #[serde(default)]
    pub pin: std::collections::BTreeMap<String, Spanned<String>>,
    /// Dependencies taken from another source with cargo's `[patch.crates-io]` semantics,
    /// e.g. `{ tokio = { path = "../tokio/tokio" } }` or
    /// `{ httparse = { git = "file:///src/httparse", rev = "abc123" } }`.
    #[serde(default)]
    pub patch: std::collections::BTreeMap<String, Spanned<PatchSpec>>,
    /// Extra service arguments for this variant instead of the entry's `args` (e.g.
    /// `["--burn-ns", "2000"]` to inject a known slowdown).
    pub args: Option<Vec<String>>,
}

/// One `patch` entry of a variant: a local path, or a git repository and a revision.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PatchSpec {
    /// A directory with the crate's Cargo.toml (relative: to the matrix file).
    pub path: Option<Spanned<String>>,
    /// A git URL, or a local repository (`file://` or a path relative to the matrix file).
    pub git: Option<Spanned<String>>,
    /// The git revision (required with `git`).
    pub rev: Option<Spanned<String>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: Spanned<String>,
    /// Path and query, e.g. "/sleep?ms=1".
    pub path: Spanned<String>,
    /// false = a new connection per request (`Connection: close`).
    #[serde(default = "yes")]
    pub keepalive: bool,
    /// Expected response body length; checked by the generator on every response.
    pub expect_body_bytes: Option<u64>,
    /// Extra request headers: a list of "Name: value" (as `curl -H` takes them), in order,
    /// or the name of a built-in set ("browser-like"). Checked in `validate::headers`.
    pub headers: Option<Spanned<toml::Value>>,
    /// "http/1.1" (default) or "h2"; with `tls = true` over TLS 1.3 (ALPN settles the
    /// protocol), else in cleartext (HTTP/2 as h2c, with prior knowledge).
    pub protocol: Option<Spanned<String>>,
    pub tls: Option<Spanned<bool>>,
    pub load: Load,
    /// Restrict to these profiles (default: all).
    pub profiles: Option<Spanned<Vec<String>>>,
}

fn yes() -> bool {
    true
}

/// Load model of a scenario. A flat struct (not a tagged enum) so the fields keep their
/// spans: closed = `connections` (one level each) + `pipeline`; open = `rates_per_s` (one
/// level each) + `max_connections`; churn = `connections` (one level each) + `cycles`. Each
/// level keeps its own span too.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    pub model: Spanned<ModelKind>,
    pub connections: Option<Spanned<Vec<Spanned<u32>>>>,
    pub pipeline: Option<Spanned<u32>>,
    /// HTTP/2's closed loop: concurrent streams per connection (`h2load -m`), each re-sent as
    /// soon as it is answered.
    pub streams: Option<Spanned<u32>>,
    pub rates_per_s: Option<Spanned<Vec<Spanned<f64>>>>,
    pub max_connections: Option<Spanned<u32>>,
    /// Churn model: open/close rounds per repetition.
    pub cycles: Option<Spanned<u32>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    Closed,
    Open,
    /// Connection churn: `connections` (one level each) opened, served once, held and
    /// closed, `cycles` times; the service's RSS read after each round.
    Churn,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub name: Spanned<String>,
    /// CPU list for the server, e.g. "0" or "0-1" or "0,2".
    pub server_cpus: Spanned<String>,
    pub loadgen_cpus: Spanned<String>,
    /// CPUs of quota (0.2 = `cpu: 200m`).
    pub cpu_quota: Option<Spanned<f64>>,
    /// Memory limit in MiB (`memory: 400Mi` = 400).
    pub memory_max_mib: Option<Spanned<u64>>,
    /// `--workers` for the service; default = number of server CPUs.
    pub workers: Option<Spanned<u32>>,
    /// The `[[hosts]]` name the service runs on ("local" = this machine). Giving this or
    /// `loadgen_hosts` makes every cell of the profile a multi-host cell.
    pub server_host: Option<Spanned<String>>,
    /// The hosts the load is split between (default: ["local"]); each returns its full
    /// histograms and the cell's percentiles come from their merge.
    pub loadgen_hosts: Option<Spanned<Vec<Spanned<String>>>>,
}

/// `[[hosts]]`: one machine reached with the system OpenSSH client.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostEntry {
    /// What profiles call it (not "local", which is this machine).
    pub name: Spanned<String>,
    /// SSH destination: a host name or address.
    pub host: Spanned<String>,
    pub user: Option<Spanned<String>>,
    pub port: Option<Spanned<u16>>,
    /// `ssh -i`, relative to the matrix file.
    pub identity_file: Option<Spanned<String>>,
    /// The address a service on this host listens on and generators connect to; default:
    /// `host` (resolved when the run starts if it is a name).
    pub address: Option<Spanned<String>>,
    /// Where the binaries are shipped to on the host (absolute, or `~/…` under the SSH
    /// user's home); default "~/.cache/pingmatrix". It must be the SSH user's and writable
    /// by nobody else (checked on the host).
    pub work_dir: Option<Spanned<String>>,
    /// Extra `ssh -o` options, "Key=Value" each (e.g. "UserKnownHostsFile=...").
    #[serde(default)]
    pub ssh_options: Vec<Spanned<String>>,
}
