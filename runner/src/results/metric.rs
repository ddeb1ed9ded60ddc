//! The metrics a comparison covers, which direction is better for each, and how to read
//! their per-repetition values out of a cell (falling back to results.json summaries).

use serde::Serialize;

pub use crate::results::schema::Metric;
use crate::results::schema::{CellResult, CellSummary, Stat};
use crate::results::stats;
pub use crate::results::units::Unit;

/// The counted metrics: judged only in cells that counted them, so runs recorded before
/// counted cost read (and render) as they did.
pub const COUNTED: [Metric; 6] = [
    Metric::SyscallsPerRequest,
    Metric::CtxSwitchesPerRequest,
    Metric::InstructionsPerRequest,
    Metric::PacketsPerRequest,
    Metric::SocketSendsPerRequest,
    Metric::IoUringSubmissionsPerRequest,
];

/// The counted metrics that are one kernel tracepoint each (`count::perf::KERNEL_EVENTS`,
/// the server's count per response): a new one is a row here and a variant. These repeated
/// exactly (CV 0 over three repetitions, c1 and c64) on ping-epoll, -tokio-hyper, -monoio and
/// -compio; docs/counted-cost.md has the figures and the events left out (wake-ups, softirqs:
/// not exact).
pub const KERNEL: [(Metric, &str); 3] = [
    (Metric::PacketsPerRequest, "net:net_dev_xmit"),
    (Metric::SocketSendsPerRequest, "sock:sock_send_length"),
    (
        Metric::IoUringSubmissionsPerRequest,
        "io_uring:io_uring_submit_req",
    ),
];

/// The metrics a cell measured: [`measured_under`] its load, plus the counted ones it has
/// values of.
pub fn measured_in(c: &CellResult) -> impl Iterator<Item = Metric> + use<'_> {
    measured_under(&c.cell.load).chain(COUNTED.into_iter().filter(|&m| !by_rep(c, m).is_empty()))
}

pub const ALL: [Metric; 7] = [
    Metric::RequestsPerS,
    Metric::LatencyP50Us,
    Metric::LatencyP99Us,
    Metric::StartupUs,
    Metric::IdleRssBytes,
    Metric::PeakRssBytes,
    Metric::CpuUsPerRequest,
];

/// The metrics only a connection-churn cell measures (compared besides [`ALL`] there).
pub const CHURN: [Metric; 1] = [Metric::ChurnRssLastBytes];

/// The metrics a cell under `load` measures: at a fixed offered rate req/s is the
/// generator's setting, not a measurement.
pub fn measured_under(load: &loadgen::LoadModel) -> impl Iterator<Item = Metric> + use<> {
    let open = matches!(load, loadgen::LoadModel::Open { .. });
    ALL.into_iter()
        .filter(move |&m| !(open && m == Metric::RequestsPerS))
}

impl Metric {
    pub fn label(self) -> &'static str {
        match self {
            Metric::RequestsPerS => "req/s",
            Metric::LatencyP50Us => "p50 latency",
            Metric::LatencyP99Us => "p99 latency",
            Metric::StartupUs => "startup",
            Metric::IdleRssBytes => "idle RSS",
            Metric::PeakRssBytes => "peak RSS",
            Metric::CpuUsPerRequest => "CPU/request",
            Metric::ChurnRssLastBytes => "RSS after churn",
            Metric::SyscallsPerRequest => "syscalls/request",
            Metric::CtxSwitchesPerRequest => "context switches/request",
            Metric::InstructionsPerRequest => "instructions/request",
            Metric::PacketsPerRequest => "packets/request",
            Metric::SocketSendsPerRequest => "socket sends/request",
            Metric::IoUringSubmissionsPerRequest => "io_uring submissions/request",
        }
    }

    pub fn unit(self) -> Unit {
        match self {
            Metric::RequestsPerS => Unit::PerSecond,
            Metric::IdleRssBytes | Metric::PeakRssBytes | Metric::ChurnRssLastBytes => Unit::Bytes,
            Metric::SyscallsPerRequest
            | Metric::CtxSwitchesPerRequest
            | Metric::InstructionsPerRequest
            | Metric::PacketsPerRequest
            | Metric::SocketSendsPerRequest
            | Metric::IoUringSubmissionsPerRequest => Unit::Count,
            _ => Unit::Micros,
        }
    }

    /// Throughput is the only metric where more is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::RequestsPerS)
    }

    /// Verdict words that fit the metric: (better, worse).
    pub fn words(self) -> (&'static str, &'static str) {
        match self {
            Metric::RequestsPerS
            | Metric::LatencyP50Us
            | Metric::LatencyP99Us
            | Metric::StartupUs => ("faster", "slower"),
            Metric::IdleRssBytes | Metric::PeakRssBytes | Metric::ChurnRssLastBytes => {
                ("smaller", "larger")
            }
            Metric::CpuUsPerRequest
            | Metric::SyscallsPerRequest
            | Metric::CtxSwitchesPerRequest
            | Metric::InstructionsPerRequest
            | Metric::PacketsPerRequest
            | Metric::SocketSendsPerRequest
            | Metric::IoUringSubmissionsPerRequest => ("cheaper", "costlier"),
        }
    }

    /// The kernel tracepoint a [`KERNEL`] metric counts.
    pub fn tracepoint(self) -> Option<&'static str> {
        KERNEL.iter().find(|k| k.0 == self).map(|k| k.1)
    }
}

/// One side's values of one metric in one cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricValues {
    pub n: u32,
    pub mean: f64,
    /// MetricValues standard deviation; `None` when n < 2 or only a point value is known.
    pub stdev: Option<f64>,
    /// The per-repetition (or per-start) values when a cell file was available.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<f64>,
}

impl MetricValues {
    pub fn from_values(values: Vec<f64>) -> Option<MetricValues> {
        Some(MetricValues {
            n: values.len() as u32,
            mean: stats::mean(&values)?,
            stdev: stats::stdev(&values),
            values,
        })
    }

    fn from_stat(s: &Stat) -> Option<MetricValues> {
        (s.n > 0).then(|| MetricValues {
            n: s.n,
            mean: s.mean,
            stdev: s.stdev,
            values: Vec::new(),
        })
    }

    /// A value with no dispersion information (e.g. a median from results.json).
    fn point(x: f64) -> MetricValues {
        MetricValues {
            n: 1,
            mean: x,
            stdev: None,
            values: Vec::new(),
        }
    }
}

/// Per-repetition values from the cell file. Repetition 0 (the drift re-run) is excluded,
/// as in the run's own summary; start-up samples use every start.
pub fn from_cell(c: &CellResult, m: Metric) -> Option<MetricValues> {
    MetricValues::from_values(by_rep(c, m).into_iter().map(|(_, v)| v).collect())
}

/// Whether repetition i of `a` and of `b` ran side by side, for every i both have: one
/// matrix process ran both (`RepResult::session`; runs before it record none, and were
/// paired). A cell restarted by `--resume` ran all of its repetitions after its partner's:
/// pairing those on their numbers would pair nothing the two shared.
pub fn side_by_side(a: &CellResult, b: &CellResult) -> bool {
    a.reps.iter().filter(|r| r.rep > 0).all(|ra| {
        b.reps
            .iter()
            .find(|rb| rb.rep == ra.rep)
            .is_none_or(|rb| rb.session == ra.session)
    })
}

/// The measured values of `m` in a cell with the repetition each came from (start-up and
/// idle RSS: the start that served it, every start counted), in recorded order; the drift
/// re-run (repetition 0) excluded.
pub fn by_rep(c: &CellResult, m: Metric) -> Vec<(u32, f64)> {
    let reps = c.reps.iter().filter(|r| r.rep > 0);
    let starts = c.starts.iter();
    let u = |x: u64| x as f64;
    match m {
        Metric::RequestsPerS => reps.map(|r| (r.rep, r.report.requests_per_s)).collect(),
        Metric::LatencyP50Us => reps.map(|r| (r.rep, u(r.report.latency_us.p50))).collect(),
        Metric::LatencyP99Us => reps.map(|r| (r.rep, u(r.report.latency_us.p99))).collect(),
        Metric::PeakRssBytes => reps
            .filter_map(|r| Some((r.rep, u(r.server.rss_peak_bytes?))))
            .collect(),
        Metric::CpuUsPerRequest => reps
            .filter_map(|r| Some((r.rep, r.server.cpu_us_per_request?)))
            .collect(),
        Metric::StartupUs => starts
            .filter_map(|s| Some((s.rep, u(s.first_200_us?))))
            .collect(),
        Metric::IdleRssBytes => starts
            .filter_map(|s| Some((s.rep, u(s.idle_rss_bytes?))))
            .collect(),
        Metric::ChurnRssLastBytes => c
            .churn
            .iter()
            .filter(|r| r.rep > 0)
            .filter_map(|r| Some((r.rep, u(r.cycles.last()?.rss_closed_bytes?))))
            .collect(),
        Metric::SyscallsPerRequest => reps
            .filter_map(|r| Some((r.rep, r.counts.as_ref()?.server.syscalls_per_request()?)))
            .collect(),
        Metric::CtxSwitchesPerRequest => reps
            .filter_map(|r| Some((r.rep, r.counts.as_ref()?.server.ctx_switches_per_request()?)))
            .collect(),
        Metric::InstructionsPerRequest => reps
            .filter_map(|r| Some((r.rep, r.instructions.as_ref()?.per_request?)))
            .collect(),
        Metric::PacketsPerRequest
        | Metric::SocketSendsPerRequest
        | Metric::IoUringSubmissionsPerRequest => {
            let tp = m.tracepoint().unwrap_or_default();
            reps.filter_map(|r| Some((r.rep, r.counts.as_ref()?.server.kernel_per_request(tp)?)))
                .collect()
        }
    }
}

/// From results.json alone: mean/stdev/n where the summary keeps them, a point otherwise.
pub fn from_summary(s: &CellSummary, m: Metric) -> Option<MetricValues> {
    match m {
        Metric::RequestsPerS => s.requests_per_s.as_ref().and_then(MetricValues::from_stat),
        Metric::LatencyP50Us => s
            .latency
            .as_ref()
            .map(|l| MetricValues::point(l.p50_us as f64)),
        Metric::LatencyP99Us => s
            .latency
            .as_ref()
            .map(|l| MetricValues::point(l.p99_us as f64)),
        Metric::StartupUs => s.startup_us.as_ref().and_then(MetricValues::from_stat),
        Metric::IdleRssBytes => s.idle_rss_bytes.as_ref().and_then(MetricValues::from_stat),
        Metric::PeakRssBytes => s.rss_peak_bytes.map(|b| MetricValues::point(b as f64)),
        Metric::CpuUsPerRequest => s
            .server_cpu_us_per_request
            .as_ref()
            .and_then(MetricValues::from_stat),
        Metric::ChurnRssLastBytes => s
            .churn
            .as_ref()
            .and_then(|c| c.rss_last_bytes)
            .map(|b| MetricValues::point(b as f64)),
        // Counted cost is read from the cell files only.
        Metric::SyscallsPerRequest
        | Metric::CtxSwitchesPerRequest
        | Metric::InstructionsPerRequest
        | Metric::PacketsPerRequest
        | Metric::SocketSendsPerRequest
        | Metric::IoUringSubmissionsPerRequest => None,
    }
}

/// Prefer the cell file (real per-repetition values) over the summary.
pub fn values(summary: &CellSummary, cell: Option<&CellResult>, m: Metric) -> Option<MetricValues> {
    match cell {
        Some(c) => from_cell(c, m),
        None => from_summary(summary, m),
    }
}
