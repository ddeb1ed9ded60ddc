//! Counted cost records: what the kernel counted for a process over a repetition's measured
//! window (syscalls, context switches, page faults, user/system CPU), totals and per
//! response. Counts are exact where times are noisy, so they rank services on a busy machine.
//!
//! Added to results after schema version 1 as optional fields: runs without them read as
//! "not counted" and render exactly as before.

use serde::{Deserialize, Serialize};

use crate::results::schema::{RepResult, Stat};
use crate::results::stats::summarize;

/// Kernel counts of one process (every thread) over one measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessCounts {
    /// Responses in the window (the divisor of every per-request value).
    pub responses: u64,
    /// `raw_syscalls:sys_enter` events (perf stat, every thread, inherited by new ones) in
    /// the syscall window — a separate, shorter window of the same load right after the
    /// measured one, because perf's tracepoint slows every syscall on the machine (so it must
    /// not run in the timed window); `None` with `syscalls_unmeasured` saying why.
    pub syscalls: Option<f64>,
    /// Responses in the syscall window (the divisor of syscalls per request).
    #[serde(default)]
    pub syscall_window_responses: u64,
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
}

impl ProcessCounts {
    fn per(&self, x: Option<f64>) -> Option<f64> {
        x.filter(|_| self.responses > 0)
            .map(|v| v / self.responses as f64)
    }

    pub fn syscalls_per_request(&self) -> Option<f64> {
        // 0: counted in the measured window itself (results before the syscall window).
        match self.syscall_window_responses {
            0 => self.per(self.syscalls),
            n => self.syscalls.map(|v| v / n as f64),
        }
    }

    /// Voluntary plus involuntary.
    pub fn ctx_switches_per_request(&self) -> Option<f64> {
        self.per(Some(
            self.voluntary_ctx_switches? + self.involuntary_ctx_switches?,
        ))
    }

    /// Voluntary switches: the thread went to sleep, so each is one wake-up later.
    pub fn wakeups_per_request(&self) -> Option<f64> {
        self.per(self.voluntary_ctx_switches)
    }

    pub fn faults_per_request(&self) -> Option<f64> {
        self.per(Some(self.minor_faults? + self.major_faults?))
    }

    pub fn user_us_per_request(&self) -> Option<f64> {
        self.per(self.user_us)
    }

    pub fn system_us_per_request(&self) -> Option<f64> {
        self.per(self.system_us)
    }
}

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
}

impl PerRequestSummary {
    fn of(counts: &[&ProcessCounts]) -> PerRequestSummary {
        let s = |f: fn(&ProcessCounts) -> Option<f64>| {
            summarize(&counts.iter().filter_map(|c| f(c)).collect::<Vec<f64>>())
        };
        PerRequestSummary {
            syscalls: s(ProcessCounts::syscalls_per_request),
            syscalls_unmeasured: counts.iter().find_map(|c| c.syscalls_unmeasured.clone()),
            ctx_switches: s(ProcessCounts::ctx_switches_per_request),
            wakeups: s(ProcessCounts::wakeups_per_request),
            faults: s(ProcessCounts::faults_per_request),
            user_us: s(ProcessCounts::user_us_per_request),
            system_us: s(ProcessCounts::system_us_per_request),
        }
    }
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
    /// How the kernel counts were taken.
    pub tool: String,
}

/// The counted cost of a cell's measured repetitions; `None` when none was counted (runs
/// recorded before counted cost).
pub fn summarize_reps(reps: &[&RepResult]) -> Option<CountedSummary> {
    let counted: Vec<&RepCounts> = reps.iter().filter_map(|r| r.counts.as_ref()).collect();
    if counted.is_empty() {
        return None;
    }
    let side = |f: fn(&RepCounts) -> &ProcessCounts| {
        PerRequestSummary::of(&counted.iter().map(|c| f(c)).collect::<Vec<_>>())
    };
    let ins: Vec<&InstructionCount> = reps
        .iter()
        .filter_map(|r| r.instructions.as_ref())
        .collect();
    Some(CountedSummary {
        reps: counted.len() as u32,
        server: side(|c| &c.server),
        loadgen: side(|c| &c.loadgen),
        instructions: summarize(&ins.iter().filter_map(|i| i.per_request).collect::<Vec<_>>()),
        instructions_unmeasured: ins.iter().find_map(|i| i.unmeasured.clone()),
        instructions_tool: ins.first().map(|i| i.tool.clone()),
        tool: counted[0].tool.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_request_values_divide_by_responses() {
        let c = ProcessCounts {
            responses: 1000,
            syscalls: Some(1015.0),
            syscall_window_responses: 500,
            voluntary_ctx_switches: Some(500.0),
            involuntary_ctx_switches: Some(20.0),
            minor_faults: Some(10.0),
            major_faults: Some(0.0),
            user_us: Some(3000.0),
            system_us: Some(1500.0),
            ..Default::default()
        };
        assert_eq!(c.syscalls_per_request(), Some(2.03));
        assert_eq!(c.ctx_switches_per_request(), Some(0.52));
        assert_eq!(c.wakeups_per_request(), Some(0.5));
        assert_eq!(c.faults_per_request(), Some(0.01));
        assert_eq!(c.user_us_per_request(), Some(3.0));
        assert_eq!(c.system_us_per_request(), Some(1.5));
        let none = ProcessCounts::default();
        assert_eq!(none.syscalls_per_request(), None, "no responses: no ratio");
    }
}
