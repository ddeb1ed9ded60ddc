//! `[defaults]` and the windows of `[quick]`: timing, timeouts, the load generator.

use std::path::PathBuf;

use super::Errs;
use super::binaries::Binaries;
use crate::config::schema::{Defaults, Quick};
use crate::config::{QuickDef, Timing};

/// The checked `[defaults]`, minus `reference` (a cell: see `cells`).
pub(super) struct Settings {
    pub timing: Timing,
    pub startup_timeout_ms: u64,
    pub stop_grace_ms: u64,
    pub request_timeout_ms: u64,
    pub loadgen_threads: u32,
    pub loadgen: PathBuf,
}

pub(super) fn check(errs: &mut Errs, d: &Defaults, binaries: &Binaries) -> Settings {
    if *d.repetitions.get_ref() == 0 {
        errs.at(
            d.repetitions.span(),
            "defaults.repetitions",
            "must be at least 1",
        );
    }
    if *d.duration_ms.get_ref() == 0 {
        errs.at(d.duration_ms.span(), "defaults.duration_ms", "must be > 0");
    }
    if *d.loadgen_threads.get_ref() == 0 {
        errs.at(
            d.loadgen_threads.span(),
            "defaults.loadgen_threads",
            "must be at least 1",
        );
    }
    Settings {
        timing: Timing {
            warmup_ms: *d.warmup_ms.get_ref(),
            duration_ms: *d.duration_ms.get_ref(),
            repetitions: *d.repetitions.get_ref(),
            cooldown_ms: *d.cooldown_ms.get_ref(),
        },
        startup_timeout_ms: *d.startup_timeout_ms.get_ref(),
        stop_grace_ms: *d.stop_grace_ms.get_ref(),
        request_timeout_ms: *d.request_timeout_ms.get_ref(),
        loadgen_threads: *d.loadgen_threads.get_ref(),
        loadgen: binaries.resolve(errs, &d.loadgen, "defaults.loadgen"),
    }
}

/// The `[quick]` windows (its cells are checked in `cells`).
pub(super) fn quick(_errs: &mut Errs, q: &Quick) -> QuickDef {
    QuickDef {
        cells: q.cells.get_ref().clone(),
        warmup_ms: q.warmup_ms.as_ref().map(|v| *v.get_ref()),
        duration_ms: q.duration_ms.as_ref().map(|v| *v.get_ref()),
        repetitions: q.repetitions.as_ref().map(|v| *v.get_ref()),
        cooldown_ms: q.cooldown_ms.as_ref().map(|v| *v.get_ref()),
    }
}
