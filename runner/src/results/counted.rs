//! Counted cost, computed: per-request values of what the kernel counted for a process over
//! a repetition's measured window. The records are in `schema::counted`; a cell's summary of
//! them is `summary::counted`. Counts are exact where times are noisy, so they rank services
//! on a busy machine.

use crate::results::schema::{HardwareCounts, KernelCounts, ProcessCounts, Stat};

/// A count whose per-repetition CV is above this is not exact: the same binary counted the
/// same load differently (counts of a deterministic runtime repeat to 0.1 % or better).
pub const EXACT_CV: f64 = 0.01;

/// What a count marked not exact means, where a view marks one.
pub const NOT_EXACT: &str = "A count marked (not exact) moved more than 1 % CV between repetitions of one binary: it follows timing, not only requests (e.g. an executor that re-arms its timers on every loop pass: ping-glommio, docs/counted-cost.md), so it ranks only as far as its range allows and its gate threshold is its own A/A noise.";

/// Whether `s` varied past [`EXACT_CV`] over its repetitions.
pub fn not_exact(s: &Stat) -> bool {
    s.n > 1 && s.cv.is_some_and(|cv| cv > EXACT_CV)
}

/// A count as the tables show it: the median, ± its per-repetition CV, and "(not exact)"
/// past [`EXACT_CV`].
pub fn count_text(s: &Stat) -> String {
    let median = crate::results::units::count(s.median);
    match s.cv {
        Some(cv) if s.n > 1 => format!(
            "{median} ±{:.1} %{}",
            cv * 100.0,
            if not_exact(s) { " (not exact)" } else { "" }
        ),
        _ => median,
    }
}

impl HardwareCounts {
    fn per(&self, x: Option<f64>) -> Option<f64> {
        x.filter(|_| self.responses > 0)
            .map(|v| v / self.responses as f64)
    }

    /// User-space instructions per request, as perf's `instructions:u` counted them.
    pub fn instructions_user_per_request(&self) -> Option<f64> {
        self.per(self.instructions_user)
    }

    /// Kernel instructions per request (`instructions:k`): the syscalls' and interrupts' work.
    pub fn instructions_kernel_per_request(&self) -> Option<f64> {
        self.per(self.instructions_kernel)
    }

    pub fn cycles_per_request(&self) -> Option<f64> {
        self.per(self.cycles)
    }
}

impl KernelCounts {
    /// Events of `tracepoint` per request, or `None` where it was not counted.
    pub fn per_request(&self, tracepoint: &str) -> Option<f64> {
        self.counts
            .get(tracepoint)
            .filter(|_| self.responses > 0)
            .map(|v| v / self.responses as f64)
    }
}

impl ProcessCounts {
    /// Kernel events of `tracepoint` per request, where counted.
    pub fn kernel_per_request(&self, tracepoint: &str) -> Option<f64> {
        self.kernel.as_ref()?.per_request(tracepoint)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_past_one_percent_cv_is_marked_not_exact() {
        let stat = |cv| Stat {
            n: 3,
            median: 16_855.0,
            cv: Some(cv),
            ..Default::default()
        };
        assert_eq!(count_text(&stat(0.028)), "16,855 ±2.8 % (not exact)");
        assert_eq!(count_text(&stat(0.0004)), "16,855 ±0.0 %");
        assert!(
            !not_exact(&Stat { n: 1, ..stat(0.5) }),
            "one repetition: no CV to judge"
        );
    }

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
