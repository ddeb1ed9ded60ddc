//! `[defaults]` and the windows of `[quick]`: timing, timeouts, the load generator.

use std::path::PathBuf;

use toml::Spanned;

use super::Errs;
use super::binaries::Binaries;
use super::bounds::{
    DEFAULT_MAX_REPETITIONS, MAX_DRIFT_POINTS, MAX_MS, MAX_REPETITIONS, MAX_THREADS,
    check_target_ci,
};
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
    pub drift_points: u32,
    pub target_ci_pct: Option<f64>,
    pub max_repetitions: u32,
    pub count_syscalls: bool,
}

pub(super) fn check(errs: &mut Errs, d: &Defaults, binaries: &Binaries) -> Settings {
    let field = |f: &str| format!("defaults.{f}");
    let timing = Timing {
        warmup_ms: ms(errs, &d.warmup_ms, field("warmup_ms"), 0),
        duration_ms: ms(errs, &d.duration_ms, field("duration_ms"), 1),
        repetitions: count(errs, &d.repetitions, field("repetitions"), MAX_REPETITIONS),
        cooldown_ms: ms(errs, &d.cooldown_ms, field("cooldown_ms"), 0),
    };
    let (target_ci_pct, max_repetitions) = adaptive(errs, d, timing.repetitions);
    Settings {
        timing,
        startup_timeout_ms: ms(errs, &d.startup_timeout_ms, field("startup_timeout_ms"), 1),
        stop_grace_ms: ms(errs, &d.stop_grace_ms, field("stop_grace_ms"), 0),
        request_timeout_ms: ms(errs, &d.request_timeout_ms, field("request_timeout_ms"), 1),
        loadgen_threads: count(
            errs,
            &d.loadgen_threads,
            field("loadgen_threads"),
            MAX_THREADS,
        ),
        loadgen: binaries.resolve(errs, &d.loadgen, "defaults.loadgen"),
        drift_points: drift_points(errs, &d.drift_points),
        target_ci_pct,
        max_repetitions,
        count_syscalls: *d.count_syscalls.get_ref(),
    }
}

fn drift_points(errs: &mut Errs, v: &Spanned<u32>) -> u32 {
    let n = *v.get_ref();
    if n > MAX_DRIFT_POINTS {
        errs.at(
            v.span(),
            "defaults.drift_points",
            format!("must be between 0 and {MAX_DRIFT_POINTS}; got {n}"),
        );
    }
    n
}

/// `target_ci_pct` and `max_repetitions` (which also caps `--target-ci`): the cap defaults
/// to ten, and to no fewer than the repetitions every cell gets anyway.
fn adaptive(errs: &mut Errs, d: &Defaults, repetitions: u32) -> (Option<f64>, u32) {
    let cap = d.max_repetitions.as_ref().map_or(
        DEFAULT_MAX_REPETITIONS.max(repetitions),
        |v| {
            let n = *v.get_ref();
            if !(repetitions..=MAX_REPETITIONS).contains(&n) {
                errs.at(
                    v.span(),
                    "defaults.max_repetitions",
                    format!(
                        "must be between defaults.repetitions ({repetitions}) and {MAX_REPETITIONS}; got {n}"
                    ),
                );
            }
            n
        },
    );
    let target = d.target_ci_pct.as_ref().map(|t| {
        if let Err(e) = check_target_ci(*t.get_ref()) {
            errs.at(t.span(), "defaults.target_ci_pct", e);
        }
        *t.get_ref()
    });
    (target, cap)
}

/// The `[quick]` windows, checked like those of `[defaults]` (its cells: see `cells`).
pub(super) fn quick(errs: &mut Errs, q: &Quick) -> QuickDef {
    let field = |f: &str| format!("quick.{f}");
    QuickDef {
        cells: q.cells.get_ref().clone(),
        warmup_ms: q
            .warmup_ms
            .as_ref()
            .map(|v| ms(errs, v, field("warmup_ms"), 0)),
        duration_ms: q
            .duration_ms
            .as_ref()
            .map(|v| ms(errs, v, field("duration_ms"), 1)),
        repetitions: q
            .repetitions
            .as_ref()
            .map(|v| count(errs, v, field("repetitions"), MAX_REPETITIONS)),
        cooldown_ms: q
            .cooldown_ms
            .as_ref()
            .map(|v| ms(errs, v, field("cooldown_ms"), 0)),
        count_syscalls: q.count_syscalls.as_ref().map(|v| *v.get_ref()),
    }
}

/// Milliseconds in `min..=MAX_MS`.
fn ms(errs: &mut Errs, v: &Spanned<u64>, field: String, min: u64) -> u64 {
    let ms = *v.get_ref();
    if ms < min {
        errs.at(v.span(), field, format!("must be at least {min} ms"));
    } else if ms > MAX_MS {
        errs.at(
            v.span(),
            field,
            format!("must be at most {MAX_MS} ms (1 h); got {ms}"),
        );
    }
    ms
}

/// A count in `1..=max`.
fn count(errs: &mut Errs, v: &Spanned<u32>, field: String, max: u32) -> u32 {
    let n = *v.get_ref();
    if !(1..=max).contains(&n) {
        errs.at(
            v.span(),
            field,
            format!("must be between 1 and {max}; got {n}"),
        );
    }
    n
}
