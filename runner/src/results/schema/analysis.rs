//! Records of the analyses a result set carries (adaptive stops, churn, differences,
//! calibration, verdicts): types only. Their computations — and the `impl` blocks that go
//! with them — live in the analysis modules above (`results::adaptive`, `churn`,
//! `difference`, `calibration`, `verdict`, `metric`), which import these records, never the
//! other way round.

use serde::{Deserialize, Serialize};

use crate::results::units::Unit;

// ---------------------------------------------------------------------------------------
// The statistics of one sample (`results::summary::summarize` fills them).
// ---------------------------------------------------------------------------------------

/// Dispersion of one metric over repetitions. The CI is the Student-t interval of the mean
/// (two-sided 95 %, n−1 degrees of freedom); `None` when n < 2.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    pub n: u32,
    pub mean: f64,
    pub median: f64,
    pub stdev: Option<f64>,
    /// stdev / mean (fraction, 0.05 = 5 %).
    pub cv: Option<f64>,
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
    pub min: f64,
    pub max: f64,
}

// ---------------------------------------------------------------------------------------
// The metrics a cell is summarised and compared by (`metric` computes them).
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    RequestsPerS,
    LatencyP50Us,
    LatencyP99Us,
    StartupUs,
    IdleRssBytes,
    PeakRssBytes,
    CpuUsPerRequest,
    /// Connection churn: RSS after the last open/close cycle (each repetition's last
    /// settled reading) — where a leak per cycle accumulates.
    ChurnRssLastBytes,
    /// Counted cost (`results::counted`): the service's syscalls per response.
    SyscallsPerRequest,
    /// The service's voluntary + involuntary context switches per response.
    CtxSwitchesPerRequest,
    /// The service's user-space instructions per request under Valgrind (c1 cells).
    InstructionsPerRequest,
    /// Kernel events per response (`results::metric::DEFINITIONS` names each one's tracepoint):
    /// packets the service handed to the device (one per TCP segment on loopback)...
    PacketsPerRequest,
    /// ...sends at its sockets (`sock_sendmsg`: write, send, io_uring's send alike)...
    SocketSendsPerRequest,
    /// ...io_uring submissions (each an operation the kernel performs without a syscall of
    /// its own)...
    IoUringSubmissionsPerRequest,
    /// ...and receives at its sockets (`sock_recvmsg`, an empty read that would block
    /// included).
    SocketReceivesPerRequest,
    /// Page faults (minor and major) per response: judged absolutely (its base is about 0).
    FaultsPerRequest,
}

/// Which arm of the regression gate (`scripts/gate.sh`, `scripts/lib/gate_verdict.py`) judges
/// a metric: the verdict reads this from the run's results.json, so a metric gated here is
/// gated there with no code of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arm {
    /// An exact count: past the larger of its A/A MDE and the counted floor.
    Counted,
    /// A count whose base is about 0 (a relative change means nothing): past an absolute
    /// floor per request, every head repetition above every base one.
    Absolute,
    /// A time: past both the gate's threshold and its A/A MDE.
    Time,
}

/// The statistic of a cell summary a view shows for a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// A [`Stat`]'s median (counts, start-up: what the tables rank by).
    Median,
    /// A [`Stat`]'s mean.
    Mean,
    /// A single number (percentiles of the merged histogram).
    Point,
}

/// One metric, defined once: what every view (Rust, the page's script) and the gate's
/// verdict know of it (the rows: `results::metric::DEFINITIONS`). results.json records the
/// table (`ResultsFile::metrics`), which the gate's verdict reads.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Definition {
    pub key: Metric,
    pub label: &'static str,
    /// The page's column heading (narrow).
    pub short: &'static str,
    pub unit: Unit,
    pub higher_is_better: bool,
    /// Verdict words: (better, worse).
    pub words: (&'static str, &'static str),
    /// An exact count (counted cost): judged only in cells that counted it.
    pub counted: bool,
    /// Judged as a ratio against the baseline and ranked (false for a count whose base is
    /// about 0: page faults).
    pub relative: bool,
    /// The perf tracepoint a kernel-event count counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tracepoint: Option<&'static str>,
    /// Where a results.json cell keeps it (a path of keys), and which of it views show.
    pub summary: &'static [&'static str],
    pub shown: Shown,
    /// Where a cell says why it was not measured, if it can.
    #[serde(skip_serializing_if = "no_keys")]
    pub unmeasured: &'static [&'static str],
    /// The gate arm that judges it (none: not gated), in which load models (`closed`,
    /// `open`), and an absolute arm's floor per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<Arm>,
    #[serde(skip_serializing_if = "no_keys")]
    pub gate_loads: &'static [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate_floor: Option<f64>,
    /// The only level the gate judges it at (instructions: c1, where Valgrind counts).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate_level: Option<&'static str>,
    /// A count's CV between repetitions above which it is not exact (`results::counted`): the
    /// gate then judges it as it judges a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_cv: Option<f64>,
    /// A column of the run page's leaderboard.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub leaderboard: bool,
    /// Counted per function and crate too (`counted.instruction_functions`, `…_crates`): the
    /// gate's per-function table and a patched crate's own arm extend it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub attributed: bool,
}

fn no_keys(k: &&[&str]) -> bool {
    k.is_empty()
}

// ---------------------------------------------------------------------------------------
// Adaptive repetitions: the target and why a cell stopped (`adaptive` decides).
// ---------------------------------------------------------------------------------------

/// `target_ci_pct` with its cap, as planned for a cell.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Adaptive {
    /// Stop once the primary metric's 95 % CI half-width is at most this (percent of mean).
    pub target_ci_pct: f64,
    /// The most repetitions the cell gets (its time cap).
    pub max_repetitions: u32,
}

/// Why a cell stopped repeating.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The CI half-width reached the target.
    TargetMet,
    /// `max_repetitions` ran out first.
    Cap,
}

/// A cell's stop under adaptive repetitions, recorded in its file and summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stopping {
    pub reason: StopReason,
    pub repetitions: u32,
    pub metric: Metric,
    /// The primary metric's 95 % CI half-width at the stop, percent of its mean.
    pub ci_half_pct: Option<f64>,
    pub target_ci_pct: f64,
}

// ---------------------------------------------------------------------------------------
// Connection churn: the cell's rounds and their summary (`churn` summarises).
// ---------------------------------------------------------------------------------------

/// A churn cell's load: `cycles` rounds of opening `connections` connections (one request
/// each), holding them, and closing them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChurnSpec {
    pub connections: u32,
    pub cycles: u32,
}

/// One repetition of a churn cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChurnRep {
    /// 1-based.
    pub rep: u32,
    pub started_unix_ms: u64,
    /// VmRSS after start-up and verification, before the first cycle.
    pub rss_before_bytes: Option<u64>,
    pub cycles: Vec<ChurnCycle>,
    /// Why the repetition ended before its last cycle (the service exited, an interrupt):
    /// its finished cycles are kept here, and the summary leaves the repetition out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

/// One open → hold → close → settle round. `opened = served + failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChurnCycle {
    /// 1-based.
    pub cycle: u32,
    /// Connections attempted.
    pub opened: u32,
    /// Connected, sent the request and read a complete 200 response.
    pub served: u32,
    /// Connect, write or read failed, timed out, or the status was not 200.
    pub failed: u32,
    /// VmRSS with every served connection still open.
    pub rss_open_bytes: Option<u64>,
    /// VmRSS after closing them all and letting the service settle.
    pub rss_closed_bytes: Option<u64>,
    /// Close → the RSS read above (the descriptors back, then RSS stopped changing;
    /// bounded).
    pub settle_ms: u64,
    /// The service's open descriptors (/proc/PID/fd) before this cycle opened anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds_idle: Option<u32>,
    /// Close → the service's descriptor count back at `fds_idle` (it has processed every
    /// close); None when it was not within `churn::FD_SETTLE_MAX_MS` (RSS read anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd_settle_ms: Option<u64>,
    /// Opening (connect + one request each) took this long.
    pub open_ms: u64,
}

/// Whether RSS after closing the connections still rises from cycle to cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChurnVerdict {
    Levelled,
    Growing,
    /// Fewer than two cycles with an RSS reading.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChurnSummary {
    pub connections: u32,
    pub cycles: u32,
    /// Repetitions summarised; every RSS below is the median over them.
    pub n: u32,
    pub rss_before_bytes: Option<u64>,
    /// After closing: cycle 1 … cycle N, median over repetitions per cycle.
    pub rss_closed_bytes: Vec<Option<u64>>,
    pub rss_first_bytes: Option<u64>,
    pub rss_last_bytes: Option<u64>,
    /// Last − first (may be negative).
    pub growth_bytes: Option<i64>,
    /// (last − first) / first × 100.
    pub growth_pct: Option<f64>,
    /// Mean rise per cycle over the second half of the cycles (the trend that is left once
    /// allocator pools have warmed up): each repetition's, then the median over them.
    pub late_slope_bytes_per_cycle: Option<f64>,
    pub verdict: ChurnVerdict,
    pub opened: u64,
    pub failed: u64,
}

// ---------------------------------------------------------------------------------------
// The difference between two samples and its verdict (`difference` computes them).
// ---------------------------------------------------------------------------------------

/// The difference of means, new − old, with its 95 % Welch interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// new mean / old mean.
    pub ratio: f64,
    /// (new − old) / old × 100.
    pub change_pct: f64,
    /// 95 % CI of `change_pct`; `None` when either side has fewer than 2 values.
    pub ci95_low_pct: Option<f64>,
    pub ci95_high_pct: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom (floored before looking up t); n − 1 paired.
    pub df: Option<f64>,
    /// Paired on repetitions: `ratio` is the geometric mean of the per-pair ratios.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paired: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    /// The CI includes zero, or the change is within the noise threshold.
    NoChange,
    /// No interval could be computed: fewer than 2 values on a side, or only a point value
    /// (results.json keeps medians of percentiles, not their spread).
    Undetermined,
    /// The cell was run differently on the two sides (and `--force` was not given).
    NotComparable,
    /// The metric was not measured on one side.
    Missing,
}

// ---------------------------------------------------------------------------------------
// Same-service calibration (`calibration` computes it).
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub service: String,
    pub cells: Vec<CalibrationCell>,
}

/// One calibration cell: both arms at one scenario/level/profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationCell {
    pub scenario: String,
    pub level: String,
    pub profile: String,
    pub open_loop: bool,
    /// Rounds in which both arms were measured.
    pub pairs: u32,
    pub metrics: Vec<CalibrationMetric>,
    /// An arm that failed or stopped short, with its reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CalibrationMetric {
    pub metric: Metric,
    /// Values per arm (pairs for the paired figures).
    pub n: u32,
    /// Coefficient of variation per repetition, percent.
    pub cv_a_pct: Option<f64>,
    pub cv_b_pct: Option<f64>,
    /// B against A, paired on rounds: should include 1.
    pub aa: Option<Difference>,
    /// The suite's verdict on that A/A difference ("no change" unless the machine misled).
    pub verdict: Verdict,
    /// Standard deviation of the per-round log ratio B/A, percent.
    pub paired_sd_pct: Option<f64>,
    /// MDE of a paired comparison within a run at these settings (n rounds), percent.
    pub mde_pct: Option<f64>,
    /// MDE of comparing two runs of n repetitions each (independent samples), percent.
    pub mde_between_runs_pct: Option<f64>,
    /// Rounds a paired comparison needs to detect a 10 % difference.
    pub reps_for_10_pct: Option<u32>,
}

// ---------------------------------------------------------------------------------------
// Verdicts against the baseline service (`verdict` computes them).
// ---------------------------------------------------------------------------------------

/// One service against the baseline in one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineVerdict {
    pub key: String,
    pub service: String,
    pub baseline: String,
    pub scenario: String,
    pub level: String,
    pub profile: String,
    pub metrics: Vec<MetricVerdict>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricVerdict {
    pub metric: Metric,
    /// Service against baseline (`ratio` = service / baseline).
    pub difference: Option<Difference>,
    pub verdict: Verdict,
    /// Smallest difference this comparison would detect (95 % / 80 %), percent, from the
    /// run's calibration; None without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mde_pct: Option<f64>,
}
