//! The fixed bounds the matrix file is checked against, each with its reason. Bounds that
//! depend on the machine (open files, local ports, usable CPUs) are in `host`.

/// Every `*_ms` value — windows, pauses, timeouts — is at most 1 h. The default matrix
/// measures 1.5 s windows and budgets 10 min for everything, so an hour is a typo, not a
/// benchmark; and the cap keeps deadlines (`Instant + ms`) and the plan's estimate
/// (ms × repetitions × cells) far from overflow (`duration_ms = 9223372036854775807` used to
/// overflow the estimate, or run a cell "ok" with 0 requests).
pub const MAX_MS: u64 = 3_600_000;

/// Repetitions per cell. Results keep every repetition's full report; a thousand is already
/// far more than the statistics (Welch's t on the repetitions) need.
pub const MAX_REPETITIONS: u32 = 1000;

/// `workers` and `loadgen_threads`: each is at least one OS thread, pinned inside a cpuset.
/// 1024 is CPU_SETSIZE, the most CPUs an affinity mask can name: one thread per CPU on any
/// machine fits, a few per CPU (oversubscription) on any ordinary one too, and the bound
/// does not depend on this machine, so a file valid on a laptop is valid on a server.
/// 100,000 threads measure the scheduler and the kernel's thread limits, not a runtime.
pub const MAX_THREADS: u32 = 1024;

/// Requests per write with pipelining: loadgen's own bound (`LoadSpec::validate`).
pub const MAX_PIPELINE: u32 = 1024;

/// Offered rate of an open-loop level. 10,000,000/s is 100 ns between sends, beyond what one
/// loopback client or server on one machine can do by an order of magnitude; more is a
/// typo (an extra zero or two) that would only measure the generator falling behind.
pub const MAX_RATE_PER_S: f64 = 10_000_000.0;

/// `memory_max_mib`: 16 TiB, more memory than any machine this runs on; the bound keeps
/// the conversion to bytes from overflowing.
pub const MAX_MEMORY_MIB: u64 = 16 << 20;

/// Open/close rounds of a churn level. Two are the fewest that show a trend; a leak shows
/// within a handful (issue 12: 8 cycles of 3,000 connections), and each round costs a
/// settle pause, so a hundred is already a long repetition.
pub const MAX_CHURN_CYCLES: u32 = 100;

/// Re-runs of the reference cell for drift. Each costs one repetition; twenty already draw
/// the drift's shape on the longest matrix.
pub const MAX_DRIFT_POINTS: u32 = 20;

/// Adaptive repetitions stop when repetitions run out (`max_repetitions`) unless told
/// otherwise: ten is where a 10 % effect at a 5 % spread per repetition is detected (paired,
/// 95 % / 80 %) with room to spare.
pub const DEFAULT_MAX_REPETITIONS: u32 = 10;

/// `target_ci_pct` / `--target-ci`: a 95 % CI half-width in percent of the mean. 0 would
/// never be reached; more than 100 % is no target (a CI that wide says nothing).
pub fn check_target_ci(pct: f64) -> Result<f64, String> {
    if pct.is_finite() && pct > 0.0 && pct <= 100.0 {
        Ok(pct)
    } else {
        Err(format!(
            "must be a percentage above 0 and at most 100 (the 95 % CI half-width); got {pct}"
        ))
    }
}
