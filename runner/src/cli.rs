//! Command line (clap derive): every subcommand's arguments. Adding a subcommand = one enum
//! variant here, one file in `cmd/` and one match arm in main.rs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::plan;

#[derive(Debug, Parser)]
#[command(
    name = "matrix",
    version,
    long_version = pingmatrix_stamp::STAMP,
    about = "Run the pingmatrix benchmark matrix and explain every number"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every service × scenario × load level × profile and write a result set.
    Run(RunArgs),
    /// Print the expanded cells and the time estimate without running anything.
    Plan(SelectArgs),
    /// Measure what this machine can tell apart: one service as two identical arms, A B A B,
    /// with the run's windows and repetitions ([calibration] of the matrix file, or the
    /// baseline service at the first closed- and open-loop cell). Writes a result set whose
    /// results.md gives, per metric, the spread, the A/A interval and the minimum detectable
    /// effect.
    Calibrate(RunArgs),
    /// Compare two result sets cell by cell: ratio, 95 % CI of the change, verdict.
    Compare(CompareArgs),
    /// Write SVG plots and results.md for a run (optionally the README reference section).
    Report(ReportArgs),
    /// Write a static site over every result set under a directory: an index, each run's
    /// page, a compare view and a history per cell (self-contained HTML, no network).
    Site(SiteArgs),
    /// The variant build cache (target/variants, or PINGMATRIX_VARIANTS_DIR): `list` each
    /// cached build with its size; `prune` frees the space no later run reads.
    #[command(subcommand)]
    Variants(VariantsCommand),
    /// Which services (services/services.toml) link a crate, and through which dependency,
    /// read from Cargo.lock (no network).
    Which(WhichArgs),
    /// Kubernetes (optional target): render per-cell manifests, no cluster needed.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Turn the generator Jobs' reports of rendered manifests into a result set.
    Ingest(IngestArgs),
    /// The runner's agent on a host of a multi-host run (started by the runner over SSH;
    /// JSON lines on stdin/stdout; exits, stopping what it started, when stdin closes).
    #[command(hide = true)]
    Agent,
    /// The runner's guardian (started by `matrix run` and the agent): when the runner's end
    /// of its stdin closes — the runner exited, however — kills every process the runner
    /// started a service in that is still there.
    #[command(hide = true)]
    Guard {
        runner: u32,
        /// The runner's marker ([`crate::process::guard::marker`]).
        #[arg(long)]
        marker: String,
    },
}

/// Which matrix file and which part of it.
#[derive(Debug, Clone, Args)]
pub struct SelectArgs {
    /// The matrix file.
    #[arg(long, default_value = "matrix.toml")]
    pub config: PathBuf,
    /// Run the [quick] subset (short windows, a few representative cells).
    #[arg(long)]
    pub quick: bool,
    /// Filter cells: service=a,b  scenario=x  profile=p  level=c64, or a bare name matching
    /// any of them. Repeatable; different dimensions combine with AND.
    #[arg(long, value_name = "FILTER")]
    pub only: Vec<String>,
    /// Adaptive repetitions: repeat each cell until the 95 % CI half-width of its primary
    /// metric (closed loop: req/s; open loop: server CPU/request) is at most PCT percent, or
    /// until max_repetitions ([defaults], default 10). Overrides target_ci_pct of the file.
    #[arg(long, value_name = "PCT", value_parser = target_ci, allow_hyphen_values = true)]
    pub target_ci: Option<f64>,
    /// Instructions per request: after each repetition of a closed-loop cell at one
    /// connection, run the service under Valgrind (cachegrind) for 2,000 and 6,000 requests
    /// and record the slope (user space only). io_uring services are counted on io_uring
    /// (docs/counted-cost.md). `matrix plan` includes its time in the estimate.
    #[arg(long)]
    pub count_instructions: bool,
}

/// `--target-ci`: the matrix file's rule, checked before anything runs (exit 2).
fn target_ci(s: &str) -> Result<f64, String> {
    let pct: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("not a number: {s:?}"))?;
    crate::config::validate::check_target_ci(pct)
}

impl SelectArgs {
    /// Which part of the matrix the plan expands.
    pub fn plan_options(&self) -> plan::Options {
        plan::Options {
            quick: self.quick,
            only: self.only.clone(),
            target_ci_pct: self.target_ci,
            calibration: plan::Calibrate::AsConfigured,
            count_instructions: self.count_instructions,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Parent directory of the run directory (results/<run-id>/).
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Continue an interrupted run: skip cells whose result files are complete. The run's
    /// own recorded matrix, --quick and --only apply; giving them again is an error.
    #[arg(long, value_name = "RUN_DIR", conflicts_with_all = ["config", "quick", "only", "target_ci"])]
    pub resume: Option<PathBuf>,
    /// Validate and print the plan, run nothing (same as `matrix plan`).
    #[arg(long)]
    pub dry_run: bool,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// After each cell's measured repetitions, run one extra repetition with `perf record`
    /// on the server during the measured window: flamegraphs/<cell key>.svg, linked from
    /// results.md. That repetition is left out of every summary. Where perf is missing or
    /// refused, the run goes on and says why.
    #[arg(long)]
    pub flamegraph: bool,
    /// With --flamegraph: samples per second (`perf record -F`). Each sample copies 8 KiB of
    /// stack for DWARF unwinding, so higher rates cost the server more.
    #[arg(
        long,
        value_name = "HZ",
        default_value_t = 499,
        requires = "flamegraph"
    )]
    pub flamegraph_hz: u32,
    /// With --flamegraph: leave inlined functions inside their callers (`perf script
    /// --no-inline`). Far faster to draw — binutils' addr2line resolves every address
    /// otherwise, seconds to minutes per cell with large debug info — but flatter stacks.
    #[arg(long, requires = "flamegraph")]
    pub flamegraph_no_inline: bool,
    /// Replay the repetitions a run directory recorded (`rep::Replay`), or take them from a
    /// file that authors each cell's outcomes (`rep::authored`), instead of running any: for
    /// tests of everything after a repetition. Hidden: its results are not measurements.
    #[arg(
        long,
        hide = true,
        value_name = "RUN_DIR|OUTCOMES.toml",
        conflicts_with = "resume"
    )]
    pub fake_reps: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum VariantsCommand {
    /// Each entry of the cache: its size, and the build it holds (service, commit, pins and
    /// patches) or why it is incomplete.
    List,
    /// Remove every built variant's source tree and build directory (its binary and record
    /// stay, so later runs still reuse it); say what was removed and the bytes freed.
    Prune {
        /// Remove every entry whole, incomplete ones and the git mirrors too (not while a
        /// run is building variants: an incomplete entry may be its build in progress).
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct WhichArgs {
    /// The crate's name as Cargo.lock spells it (e.g. httparse).
    #[arg(long = "crate", value_name = "NAME")]
    pub krate: String,
}

#[derive(Debug, Subcommand)]
pub enum K8sCommand {
    /// Write <out>/<cell key>/ with the server Pod (Guaranteed QoS), its Service, the load
    /// spec ConfigMap and the loadgen Job (anti-affinity to the server's node), plus
    /// plan.json, matrix.toml and HOW-TO.txt.
    Render(K8sRenderArgs),
}

#[derive(Debug, Clone, Args)]
pub struct K8sRenderArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Directory to write.
    #[arg(long, default_value = "k8s")]
    pub out: PathBuf,
    /// Images are <prefix><binary name>:<tag>.
    #[arg(long, default_value = "pingmatrix/")]
    pub image_prefix: String,
    #[arg(long, default_value = "latest")]
    pub tag: String,
}

#[derive(Debug, Clone, Args)]
pub struct IngestArgs {
    /// A directory `matrix k8s render` wrote (its plan.json and matrix.toml are read).
    #[arg(long)]
    pub manifests: PathBuf,
    /// The Jobs' loadgen reports, as <cell key>.<n>.json (or <cell key>.json).
    #[arg(long)]
    pub reports: PathBuf,
    /// Parent directory of the new result set.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline: a run directory (results/<run-id>) or its results.json.
    pub old: PathBuf,
    /// The candidate: a run directory or its results.json.
    pub new: PathBuf,
    /// Changes smaller than this (percent) are "no change" even when significant
    /// (instructions/request: at most 0.5 %, their counts repeat to about 0.1 %).
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub noise_pct: f64,
    /// Compare even when hardware, load generator, load model, pinning or limits differ
    /// (the output header says so).
    #[arg(long)]
    pub force: bool,
    #[arg(long, value_enum, default_value_t = Format::Terminal)]
    pub format: Format,
    /// Exit with status 1 if any metric got significantly worse by at least PCT percent —
    /// or if the new run cannot be judged: failed cells, cells missing from it, no cells.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// With --fail-on-regression: pass even when the new run has failed or missing cells
    /// (they are still listed on stderr).
    #[arg(long, requires = "fail_on_regression")]
    pub allow_incomplete: bool,
    /// Replace the text between the pingmatrix:compare markers of this file with the
    /// Markdown comparison.
    #[arg(long, value_name = "FILE")]
    pub readme: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Terminal,
    Markdown,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// The run directory (results/<run-id>) or its results.json.
    pub run: PathBuf,
    /// Replace the text between the pingmatrix:reference markers of this file with the
    /// headline table and links to two plots.
    #[arg(long, value_name = "FILE")]
    pub readme: Option<PathBuf>,
    /// Load level for the latency spectra (e.g. c64); default: the highest level every
    /// service of a scenario reached.
    #[arg(long, value_name = "LEVEL")]
    pub latency_level: Option<String>,
    /// Instead of plots and results.md: a differential flame graph for every cell that both
    /// OLD_RUN and this run profiled (`matrix run --flamegraph`), written to
    /// <run>/flamegraphs/<cell key>.diff.svg — the shape of this run, red where it spends
    /// more of its samples than OLD_RUN, blue where less. Refused when the perf events
    /// differ.
    #[arg(long, value_name = "OLD_RUN", conflicts_with = "readme")]
    pub diff_flamegraph: Option<PathBuf>,
    /// Only write the run's page, <run>/index.html (one self-contained file: leaderboards,
    /// charts, every repetition), instead of plots and results.md.
    #[arg(long, conflicts_with_all = ["readme", "diff_flamegraph", "latency_level"])]
    pub html: bool,
    /// First rewrite results.json's cell summaries from the cell files with this build's
    /// code (drift, calibration and verdicts kept), for when what a summary derives from the
    /// repetitions changed — e.g. when the saturation verdict does.
    #[arg(long, conflicts_with_all = ["diff_flamegraph", "html"])]
    pub resummarize: bool,
}

#[derive(Debug, Clone, Args)]
pub struct SiteArgs {
    /// Directory holding the result sets (each a subdirectory with results.json).
    #[arg(default_value = "results")]
    pub results: PathBuf,
    /// Where the site is written: index.html and <run-id>/index.html per run.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}
