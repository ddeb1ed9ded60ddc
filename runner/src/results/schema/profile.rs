//! A flame graph's record as a cell keeps it: how it was taken and where its files are, or why
//! none could be (`profile` takes them; the views read these).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How perf records call stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "method")]
pub enum CallGraph {
    /// `--call-graph dwarf,<stack_bytes>`: copy that much of the user stack per sample and
    /// unwind it with the binary's DWARF CFI. Works without frame pointers.
    Dwarf { stack_bytes: u32 },
    /// `--call-graph fp`: walk frame pointers. Only meaningful for binaries built with them.
    FramePointer,
}

impl CallGraph {
    /// The argument of perf's `--call-graph`.
    pub fn perf_arg(&self) -> String {
        match self {
            CallGraph::Dwarf { stack_bytes } => format!("dwarf,{stack_bytes}"),
            CallGraph::FramePointer => "fp".to_owned(),
        }
    }
}

/// Why no profile could be taken: perf missing, or refused by the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("not available: {reason}")]
pub struct NotAvailable {
    pub reason: String,
}

/// What a profiling attempt left for a cell to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum Profile {
    Recorded(ProfileRecord),
    NotAvailable(NotAvailable),
}

/// One recording: how it was taken and where its outputs are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileRecord {
    /// The perf event sampled, with modifiers (`cpu-clock`, `cycles`, `cpu-clock:u`).
    pub event: String,
    /// Whether hardware counters were available (if not, `event` is the software clock).
    pub hardware_counters: bool,
    pub call_graph: CallGraph,
    pub frequency_hz: u32,
    /// Samples perf wrote (from its closing line; `None` if it printed none).
    pub samples: Option<u64>,
    /// Sum of the folded counts: inferno weights each sample by its period.
    pub weight: u64,
    /// Unit of `weight` and of the folded counts: `ns` (CPU time) for `cpu-clock`,
    /// `cycles` for `cycles`.
    pub weight_unit: String,
    /// Distinct stacks in the folded file.
    pub stacks: u64,
    /// `perf version` output, e.g. `perf version 6.1.187`.
    pub perf_version: String,
    /// Pid that was profiled (with all its threads).
    pub pid: u32,
    /// Wall time between starting and stopping perf.
    pub window_s: f64,
    pub folded: PathBuf,
    /// `None` when nothing was sampled (an idle process): inferno draws no empty graph.
    pub svg: Option<PathBuf>,
    /// Present only with `profile::Options::keep_perf_data`.
    pub perf_data: Option<PathBuf>,
}
