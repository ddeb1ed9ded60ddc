//! Counted cost records (computed in `results::counted`): what the kernel counted for a
//! process over a repetition's measured window, and Valgrind's instructions per request.
//! Optional fields added after schema version 1: runs without them read as "not counted".

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Stat;

/// Kernel counts of one process (every thread) over one measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessCounts {
    /// Responses in the window (the divisor of every per-request value).
    pub responses: u64,
    /// `raw_syscalls:sys_enter` events (perf stat, every thread, inherited by new ones) in
    /// the syscall window, after the measured one, because perf's tracepoint slows every
    /// syscall on the machine (so it must not run in the timed window): with
    /// `syscall_points`, the difference between two loads of exact request counts; without
    /// (older runs), a 700 ms window cut from perf's 100 ms intervals. `None` with
    /// `syscalls_unmeasured` saying why.
    pub syscalls: Option<f64>,
    /// Responses in the syscall window (the divisor of syscalls per request): with
    /// `syscall_points`, the difference of the two loads' responses.
    #[serde(default)]
    pub syscall_window_responses: u64,
    /// (responses, syscalls) of each exact load (N and 3N requests at the cell's shape,
    /// counted between idle gaps); absent in runs before the exact count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub syscall_points: Vec<(u64, f64)>,
    /// The server's syscalls per request by name (`perf record` of the syscall tracepoint, the
    /// same two loads' difference), largest first; absent where not counted by name (see the
    /// reason below).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub syscalls_by_name: Vec<(String, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_by_name_unmeasured: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_unmeasured: Option<String>,
    /// Summed over the process's threads (/proc/<pid>/task/*/status); `None` when /proc
    /// could not be read at both edges of the window.
    pub voluntary_ctx_switches: Option<f64>,
    pub involuntary_ctx_switches: Option<f64>,
    /// The process's own counters (/proc/<pid>/stat: exited threads included).
    pub minor_faults: Option<f64>,
    pub major_faults: Option<f64>,
    pub user_us: Option<f64>,
    pub system_us: Option<f64>,
    /// perf's hardware counters over the same two exact loads as the syscalls (the server
    /// only); absent in runs before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<HardwareCounts>,
    /// The kernel's tracepoints (`count::perf::KERNEL_EVENTS`) over the same two exact loads
    /// as the syscalls; absent in runs before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelCounts>,
}

/// Kernel events by tracepoint name (perf stat, every thread) over the exact count's two
/// loads: each the difference of its counts in the two loads, cut at the same idle-gap points
/// as the syscalls (the server) or over the generator's whole life (`perf stat -- loadgen`).
/// A tracepoint is a key, so a new one adds a row and no field. One that could not be
/// counted is absent from `counts` and present in `unmeasured` with the reason — never 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelCounts {
    /// The divisor: responses of the larger load minus those of the smaller.
    pub responses: u64,
    /// Tracepoint → its count over the difference of the two loads.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, f64>,
    /// Tracepoint → (responses, count) of each load.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub points: BTreeMap<String, Vec<(u64, f64)>>,
    /// Tracepoint → why it has no count.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unmeasured: BTreeMap<String, String>,
}

/// `instructions:u`, `instructions:k` and `cycles` (perf stat, every thread) over the exact
/// count's two loads: the difference of their counts, cut at the same idle-gap points as the
/// syscalls, over the difference of their responses. Kernel work is included (`:k`), unlike
/// Valgrind's user-space count. An event perf could not count exactly is `None`, and
/// `unmeasured` says why (on a VM without a PMU: `no hardware counters (perf: …)`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareCounts {
    // The fields and each point's array hold the events of [`HW_EVENTS`], in its order.
    pub instructions_user: Option<f64>,
    pub instructions_kernel: Option<f64>,
    pub cycles: Option<f64>,
    /// The divisor: responses of the larger load minus those of the smaller.
    #[serde(default)]
    pub responses: u64,
    /// (responses, [instructions:u, instructions:k, cycles]) of each load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<(u64, [Option<f64>; 3])>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
}

/// The hardware events perf counts beside the syscalls, as `perf stat -e` names them, in the
/// order of [`HardwareCounts`]' fields and of each of its points: user-space and kernel
/// instructions, and cycles (both modes).
pub const HW_EVENTS: [&str; 3] = ["instructions:u", "instructions:k", "cycles"];

/// One repetition's counts: the service's and the generator's processes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RepCounts {
    pub server: ProcessCounts,
    pub loadgen: ProcessCounts,
    /// How the counts were taken, e.g. `perf version 6.1.187 (raw_syscalls:sys_enter) + /proc`.
    pub tool: String,
}

/// Instructions per request for a cell, from a Valgrind run of the service at two request
/// counts (the slope, so start-up and idle cost cancel), or why there is none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InstructionCount {
    /// User-space instructions per request (the kernel's are not counted).
    pub per_request: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
    /// e.g. `valgrind-3.19.0 --tool=cachegrind --cache-sim=no`.
    pub tool: String,
    /// (requests, instructions) of each run.
    pub points: Vec<(u64, u64)>,
    /// Where they go: each function's instructions per request by the same slope, at least
    /// [`FUNCTION_MIN_PER_REQUEST`] either way, largest first; absent in
    /// counts recorded before them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<FunctionCost>,
    /// Each crate's instructions per request (its functions' sum, inlined code counted in the
    /// function it was inlined into), largest first; they add up to `per_request`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crates: Vec<CrateCost>,
}

/// Functions under this many instructions per request (either way) are left out of a count's
/// and a summary's function table; their crates' sums keep them.
pub const FUNCTION_MIN_PER_REQUEST: f64 = 0.5;

/// One function's user-space instructions per request (cachegrind, by demangled symbol).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCost {
    pub function: String,
    /// The crate its symbol names (`libc` for C functions).
    #[serde(rename = "crate")]
    pub krate: String,
    pub per_request: f64,
}

/// One crate's user-space instructions per request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrateCost {
    #[serde(rename = "crate")]
    pub krate: String,
    pub per_request: f64,
}

/// One process's per-request counts over a cell's measured repetitions (results.json).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerRequestSummary {
    pub syscalls: Option<Stat>,
    /// Why syscalls were not counted (the first repetition's reason).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_unmeasured: Option<String>,
    /// Voluntary + involuntary.
    pub ctx_switches: Option<Stat>,
    /// Voluntary switches: the thread slept and was woken.
    pub wakeups: Option<Stat>,
    pub faults: Option<Stat>,
    pub user_us: Option<Stat>,
    pub system_us: Option<Stat>,
    /// The three syscalls made most per request, by name (median over repetitions), where
    /// they were counted by name (runs from the exact count on, server only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_syscalls: Vec<(String, Stat)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_syscalls_unmeasured: Option<String>,
    /// perf's hardware counters per request (server only), where the repetitions recorded
    /// them; absent in runs before them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<HardwareSummary>,
    /// Kernel events per request by tracepoint (`KernelCounts`), over the repetitions that
    /// counted them; absent in runs before them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kernel: BTreeMap<String, Stat>,
    /// Tracepoint → why it was not counted (the first repetition's reason).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kernel_unmeasured: BTreeMap<String, String>,
}

/// Hardware counters per request over a cell's repetitions: each event's median and spread,
/// or why none (the first repetition's reason).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareSummary {
    pub instructions_user: Option<Stat>,
    pub instructions_kernel: Option<Stat>,
    pub cycles: Option<Stat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
}

/// A cell's counted cost (results.json `counted`): per-request counts of the service and the
/// generator, and instructions per request where counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CountedSummary {
    /// Repetitions that were counted.
    pub reps: u32,
    pub server: PerRequestSummary,
    pub loadgen: PerRequestSummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Stat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_unmeasured: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_tool: Option<String>,
    /// Where the instructions go: each function's median per request over the repetitions
    /// that counted functions (a function a repetition left out counting 0 there), those at
    /// least [`FUNCTION_MIN_PER_REQUEST`] either way, largest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_functions: Vec<FunctionCost>,
    /// Each crate's instructions per request over those repetitions, largest median first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_crates: Vec<(String, Stat)>,
    /// How the kernel counts were taken.
    pub tool: String,
    /// The exact-count window's two request counts (N, 3N) in its first counted repetition;
    /// absent in runs before it (their syscalls came from a 700 ms window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscall_requests: Option<(u64, u64)>,
}
