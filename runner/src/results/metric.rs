//! The metrics a comparison covers, which direction is better for each, and how to read
//! their per-repetition values out of a cell (falling back to results.json summaries).

use serde::Serialize;

pub use crate::results::schema::{Arm, Definition, Metric, Shown};
use crate::results::schema::{CellResult, CellSummary, CountedSummary, Stat};
use crate::results::stats;
pub use crate::results::units::Unit;

const COST: (&str, &str) = ("cheaper", "costlier");
const BOTH: &[&str] = &["closed", "open"];

const fn time(
    key: Metric,
    label: &'static str,
    short: &'static str,
    unit: Unit,
    words: (&'static str, &'static str),
    summary: &'static [&'static str],
    shown: Shown,
) -> Definition {
    Definition {
        key,
        label,
        short,
        unit,
        higher_is_better: false,
        words,
        counted: false,
        relative: true,
        tracepoint: None,
        summary,
        shown,
        unmeasured: &[],
        gate: None,
        gate_loads: &[],
        gate_floor: None,
        gate_level: None,
        exact_cv: None,
        leaderboard: false,
        attributed: false,
    }
}

/// A latency percentile: a point of the merged histogram, on the board, gated in open loop
/// (latency from intended send times at an equal offered rate).
const fn latency(
    key: Metric,
    label: &'static str,
    short: &'static str,
    summary: &'static [&'static str],
) -> Definition {
    Definition {
        gate: Some(Arm::Time),
        leaderboard: true,
        gate_loads: &["open"],
        ..time(
            key,
            label,
            short,
            Unit::Micros,
            ("faster", "slower"),
            summary,
            Shown::Point,
        )
    }
}

const fn count(
    key: Metric,
    label: &'static str,
    short: &'static str,
    summary: &'static [&'static str],
    unmeasured: &'static [&'static str],
) -> Definition {
    Definition {
        key,
        label,
        short,
        unit: Unit::Count,
        higher_is_better: false,
        words: COST,
        counted: true,
        relative: true,
        tracepoint: None,
        summary,
        shown: Shown::Median,
        unmeasured,
        gate: Some(Arm::Counted),
        gate_loads: BOTH,
        gate_floor: None,
        gate_level: None,
        exact_cv: Some(crate::results::counted::EXACT_CV),
        leaderboard: false,
        attributed: false,
    }
}

const fn kernel(
    key: Metric,
    label: &'static str,
    short: &'static str,
    tracepoint: &'static str,
    summary: &'static [&'static str],
    unmeasured: &'static [&'static str],
) -> Definition {
    let mut d = count(key, label, short, summary, unmeasured);
    d.tracepoint = Some(tracepoint);
    d
}

/// Every metric. A new one is a row here, a variant of [`Metric`] and its reader in
/// [`by_rep`]; the views, the page and the gate take it from this table. Kernel events are
/// one tracepoint each (`count::perf` counts every `tracepoint` here); they repeated exactly
/// (CV 0 over three repetitions, c1 and c64) on ping-epoll, -tokio-hyper, -monoio and -compio;
/// docs/counted-cost.md has the figures and the events left out (wake-ups, softirqs: not exact).
pub const DEFINITIONS: [Definition; 16] = [
    Definition {
        higher_is_better: true,
        gate: Some(Arm::Time),
        leaderboard: true,
        gate_loads: &["closed"],
        ..time(
            Metric::RequestsPerS,
            "req/s",
            "req/s",
            Unit::PerSecond,
            ("faster", "slower"),
            &["requests_per_s"],
            Shown::Mean,
        )
    },
    Definition {
        gate: Some(Arm::Time),
        leaderboard: true,
        gate_loads: &["open"],
        ..time(
            Metric::CpuUsPerRequest,
            "CPU/request",
            "CPU µs/req",
            Unit::Micros,
            COST,
            &["server_cpu_us_per_request"],
            Shown::Mean,
        )
    },
    latency(
        Metric::LatencyP50Us,
        "p50 latency",
        "p50 µs",
        &["latency", "p50_us"],
    ),
    latency(
        Metric::LatencyP99Us,
        "p99 latency",
        "p99 µs",
        &["latency", "p99_us"],
    ),
    // Start-up as results.md's start-up table and README's headline give it: a median of starts.
    Definition {
        leaderboard: true,
        ..time(
            Metric::StartupUs,
            "startup",
            "start-up µs (median)",
            Unit::Micros,
            ("faster", "slower"),
            &["startup_us"],
            Shown::Median,
        )
    },
    Definition {
        leaderboard: true,
        ..time(
            Metric::IdleRssBytes,
            "idle RSS",
            "idle RSS MiB",
            Unit::Bytes,
            ("smaller", "larger"),
            &["idle_rss_bytes"],
            Shown::Mean,
        )
    },
    time(
        Metric::PeakRssBytes,
        "peak RSS",
        "peak RSS MiB",
        Unit::Bytes,
        ("smaller", "larger"),
        &["rss_peak_bytes"],
        Shown::Point,
    ),
    time(
        Metric::ChurnRssLastBytes,
        "RSS after churn",
        "RSS after churn MiB",
        Unit::Bytes,
        ("smaller", "larger"),
        &["churn", "rss_last_bytes"],
        Shown::Point,
    ),
    count(
        Metric::SyscallsPerRequest,
        "syscalls/request",
        "syscalls/req",
        &["counted", "server", "syscalls"],
        &["counted", "server", "syscalls_unmeasured"],
    ),
    count(
        Metric::CtxSwitchesPerRequest,
        "context switches/request",
        "ctx sw/req",
        &["counted", "server", "ctx_switches"],
        &[],
    ),
    Definition {
        // Valgrind counts closed-loop c1 cells only.
        gate_loads: &["closed"],
        gate_level: Some("c1"),
        attributed: true,
        ..count(
            Metric::InstructionsPerRequest,
            "instructions/request",
            "instr/req",
            &["counted", "instructions"],
            &["counted", "instructions_unmeasured"],
        )
    },
    kernel(
        Metric::PacketsPerRequest,
        "packets/request",
        "packets/req",
        "net:net_dev_xmit",
        &["counted", "server", "kernel", "net:net_dev_xmit"],
        &["counted", "server", "kernel_unmeasured", "net:net_dev_xmit"],
    ),
    kernel(
        Metric::SocketSendsPerRequest,
        "socket sends/request",
        "sends/req",
        "sock:sock_send_length",
        &["counted", "server", "kernel", "sock:sock_send_length"],
        &[
            "counted",
            "server",
            "kernel_unmeasured",
            "sock:sock_send_length",
        ],
    ),
    kernel(
        Metric::IoUringSubmissionsPerRequest,
        "io_uring submissions/request",
        "uring sub/req",
        "io_uring:io_uring_submit_req",
        &[
            "counted",
            "server",
            "kernel",
            "io_uring:io_uring_submit_req",
        ],
        &[
            "counted",
            "server",
            "kernel_unmeasured",
            "io_uring:io_uring_submit_req",
        ],
    ),
    // Not gated: a service that batches its reads (monoio at c64) receives 1.00–1.04 times
    // a request, repetition to repetition; the others read exactly once or twice.
    Definition {
        gate: None,
        gate_loads: &[],
        ..kernel(
            Metric::SocketReceivesPerRequest,
            "socket receives/request",
            "recvs/req",
            "sock:sock_recv_length",
            &["counted", "server", "kernel", "sock:sock_recv_length"],
            &[
                "counted",
                "server",
                "kernel_unmeasured",
                "sock:sock_recv_length",
            ],
        )
    },
    // A service that does not fault per request shows 0.000x (a fault in thousands of
    // requests); two per request is 2.000: judged absolutely, never as a ratio or a rank.
    Definition {
        relative: false,
        gate: Some(Arm::Absolute),
        gate_floor: Some(0.05),
        ..count(
            Metric::FaultsPerRequest,
            "page faults/request",
            "faults/req",
            &["counted", "server", "faults"],
            &[],
        )
    },
];

/// The counted metrics judged as ratios and ranked: only in cells that counted them, so runs
/// recorded before counted cost read (and render) as they did.
pub fn counted() -> impl Iterator<Item = Metric> {
    DEFINITIONS
        .iter()
        .filter(|d| d.counted && d.relative)
        .map(|d| d.key)
}

/// The counted metrics that are one kernel tracepoint each, with it (`count::perf` counts
/// these, the server's count per response).
pub fn kernel_events() -> impl Iterator<Item = (Metric, &'static str)> {
    DEFINITIONS
        .iter()
        .filter_map(|d| Some((d.key, d.tracepoint?)))
}

/// The metrics a cell measured: [`measured_under`] its load, plus the counted ones it has
/// values of.
pub fn measured_in(c: &CellResult) -> impl Iterator<Item = Metric> + use<'_> {
    measured_under(&c.cell.load).chain(counted().filter(|&m| !by_rep(c, m).is_empty()))
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
    /// Its row of [`DEFINITIONS`] (every variant has one: a test holds it).
    pub fn def(self) -> &'static Definition {
        DEFINITIONS
            .iter()
            .find(|d| d.key == self)
            .unwrap_or(&DEFINITIONS[0])
    }

    pub fn label(self) -> &'static str {
        self.def().label
    }

    pub fn unit(self) -> Unit {
        self.def().unit
    }

    /// Throughput is the only metric where more is better.
    pub fn higher_is_better(self) -> bool {
        self.def().higher_is_better
    }

    /// Verdict words that fit the metric: (better, worse).
    pub fn words(self) -> (&'static str, &'static str) {
        self.def().words
    }

    /// The kernel tracepoint a kernel-event metric counts.
    pub fn tracepoint(self) -> Option<&'static str> {
        self.def().tracepoint
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
        Metric::FaultsPerRequest => reps
            .filter_map(|r| Some((r.rep, r.counts.as_ref()?.server.faults_per_request()?)))
            .collect(),
        Metric::PacketsPerRequest
        | Metric::SocketSendsPerRequest
        | Metric::SocketReceivesPerRequest
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
        // Counted cost: the summary's statistic over the counted repetitions (a compare
        // without the cell files still has it).
        Metric::SyscallsPerRequest => summary_count(s, |c| c.server.syscalls.as_ref()),
        Metric::CtxSwitchesPerRequest => summary_count(s, |c| c.server.ctx_switches.as_ref()),
        Metric::InstructionsPerRequest => summary_count(s, |c| c.instructions.as_ref()),
        Metric::FaultsPerRequest => summary_count(s, |c| c.server.faults.as_ref()),
        Metric::PacketsPerRequest
        | Metric::SocketSendsPerRequest
        | Metric::SocketReceivesPerRequest
        | Metric::IoUringSubmissionsPerRequest => {
            let tp = m.tracepoint().unwrap_or_default();
            summary_count(s, |c| c.server.kernel.get(tp))
        }
    }
}

fn summary_count<'a>(
    s: &'a CellSummary,
    f: impl Fn(&'a CountedSummary) -> Option<&'a Stat>,
) -> Option<MetricValues> {
    s.counted
        .as_ref()
        .and_then(f)
        .and_then(MetricValues::from_stat)
}

/// Prefer the cell file (real per-repetition values) over the summary.
pub fn values(summary: &CellSummary, cell: Option<&CellResult>, m: Metric) -> Option<MetricValues> {
    match cell {
        Some(c) => from_cell(c, m),
        None => from_summary(summary, m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every metric, by an exhaustive match: a new variant does not compile until it is here.
    fn every() -> Vec<Metric> {
        let all = [
            Metric::RequestsPerS,
            Metric::LatencyP50Us,
            Metric::LatencyP99Us,
            Metric::StartupUs,
            Metric::IdleRssBytes,
            Metric::PeakRssBytes,
            Metric::CpuUsPerRequest,
            Metric::ChurnRssLastBytes,
            Metric::SyscallsPerRequest,
            Metric::CtxSwitchesPerRequest,
            Metric::InstructionsPerRequest,
            Metric::PacketsPerRequest,
            Metric::SocketSendsPerRequest,
            Metric::SocketReceivesPerRequest,
            Metric::IoUringSubmissionsPerRequest,
            Metric::FaultsPerRequest,
        ];
        for m in all {
            match m {
                Metric::RequestsPerS
                | Metric::LatencyP50Us
                | Metric::LatencyP99Us
                | Metric::StartupUs
                | Metric::IdleRssBytes
                | Metric::PeakRssBytes
                | Metric::CpuUsPerRequest
                | Metric::ChurnRssLastBytes
                | Metric::SyscallsPerRequest
                | Metric::CtxSwitchesPerRequest
                | Metric::InstructionsPerRequest
                | Metric::PacketsPerRequest
                | Metric::SocketSendsPerRequest
                | Metric::SocketReceivesPerRequest
                | Metric::IoUringSubmissionsPerRequest
                | Metric::FaultsPerRequest => {}
            }
        }
        all.to_vec()
    }

    #[test]
    fn every_metric_is_defined_once() {
        let every = every();
        assert_eq!(DEFINITIONS.len(), every.len());
        for m in every {
            let rows: Vec<_> = DEFINITIONS.iter().filter(|d| d.key == m).collect();
            assert_eq!(rows.len(), 1, "{m:?}");
            assert_eq!(m.def().key, m);
            assert!(!rows[0].summary.is_empty(), "{m:?}: where a cell keeps it");
        }
        // Labels are one per metric: a view that finds a metric by its label finds one.
        let mut labels: Vec<_> = DEFINITIONS.iter().map(|d| d.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), DEFINITIONS.len());
    }

    const METRICS_JSON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/lib/metrics.json");

    /// The gate checks GATE_METRICS against this table before any run exists (a run's own
    /// results.json carries it after): the committed copy is the generated one.
    #[test]
    fn the_gates_copy_of_the_table_is_the_generated_one() {
        let generated = serde_json::to_string_pretty(&DEFINITIONS).unwrap() + "\n";
        if std::env::var_os("PINGMATRIX_WRITE_METRICS").is_some() {
            std::fs::write(METRICS_JSON, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(METRICS_JSON).unwrap_or_default();
        assert!(
            committed == generated,
            "scripts/lib/metrics.json differs from results::metric::DEFINITIONS; regenerate it with \
             PINGMATRIX_WRITE_METRICS=1 cargo test -p runner --lib -- metric::tests"
        );
    }

    /// The page's script and the gate's verdict keep no table of their own: no metric's label
    /// or tracepoint is written in them (they read the definitions from the data).
    #[test]
    fn the_page_and_the_gate_keep_no_metric_table() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        for file in ["runner/assets/viewer/run.js", "scripts/lib/gate_verdict.py"] {
            let text = std::fs::read_to_string(format!("{root}/{file}")).unwrap();
            for d in &DEFINITIONS {
                for (what, s) in [("label", d.label), ("short label", d.short)]
                    .into_iter()
                    .chain(d.tracepoint.map(|t| ("tracepoint", t)))
                {
                    // Quoted, as a table would hold it.
                    for q in [format!("\"{s}\""), format!("'{s}'")] {
                        assert!(
                            !text.contains(&q),
                            "{file} spells the {what} of {:?} ({q}): read it from the definitions",
                            d.key
                        );
                    }
                }
            }
        }
    }
}
