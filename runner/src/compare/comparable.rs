//! Whether two result sets may be compared at all: same hardware and load generator for the
//! run, and for each matched cell the same load model, pinning, limits and window lengths.
//! A difference here makes every delta meaningless, so it is a refusal unless `--force`.
//! The load generator is matched by its method identity, not the repository's commit
//! (`method`).

use std::collections::BTreeMap;

use crate::results::schema::{CellSpec, RunRecord};

use crate::results::set::ResultSet;

use super::method;

/// Run-level warnings: what could not be checked (a run older than loadgen's identity).
pub fn run_warnings(old: &ResultSet, new: &ResultSet) -> Vec<String> {
    match (&old.run, &new.run) {
        (Some(o), Some(n)) => method::warnings(&o.environment, &n.environment),
        _ => Vec::new(),
    }
}

/// Run-level reasons the two sides are not comparable (empty = comparable).
pub fn run_differences(old: &ResultSet, new: &ResultSet) -> Vec<String> {
    let (o, n) = match (&old.run, &new.run) {
        (Some(o), Some(n)) => (o, n),
        (o, n) => {
            let mut r = Vec::new();
            for (side, run) in [("old", o), ("new", n)] {
                if run.is_none() {
                    r.push(format!(
                        "{side} side has no run.json: its hardware and load generator are unknown"
                    ));
                }
            }
            return r;
        }
    };
    let mut r = Vec::new();
    let (ho, hn) = (&o.environment.hardware, &n.environment.hardware);
    differ(&mut r, "CPU model", &ho.cpu_model, &hn.cpu_model);
    differ(&mut r, "logical CPUs", &ho.logical_cpus, &hn.logical_cpus);
    differ(&mut r, "architecture", &ho.arch, &hn.arch);
    r.extend(method::refusals(&o.environment, &n.environment));
    r
}

fn differ<T: std::fmt::Display + PartialEq + ?Sized>(
    r: &mut Vec<String>,
    what: &str,
    o: &T,
    n: &T,
) {
    if o != n {
        r.push(format!("{what} differs: {o} vs {n}"));
    }
}

/// The resolved spec of every cell, from the per-cell files or else run.json's plan.
pub fn specs(side: &ResultSet) -> BTreeMap<String, CellSpec> {
    let mut m: BTreeMap<String, CellSpec> = side
        .run
        .iter()
        .flat_map(|r: &RunRecord| r.plan.iter())
        .map(|c| (c.key.clone(), c.clone()))
        .collect();
    for (k, c) in &side.cells {
        m.insert(k.clone(), c.cell.clone());
    }
    m
}

/// Why one cell was run differently on the two sides (empty = same load, pinning, limits).
pub fn cell_differences(old: Option<&CellSpec>, new: Option<&CellSpec>) -> Vec<String> {
    let (Some(o), Some(n)) = (old, new) else {
        // Without a spec on a side we cannot check; the run-level check already covers
        // the missing run.json case.
        return Vec::new();
    };
    let mut r = Vec::new();
    if o.load != n.load {
        r.push(format!("load model differs: {:?} vs {:?}", o.load, n.load));
    }
    differ(&mut r, "keep-alive", &o.keepalive, &n.keepalive);
    differ(
        &mut r,
        "load generator threads",
        &o.loadgen_threads,
        &n.loadgen_threads,
    );
    differ(&mut r, "request path", &o.path, &n.path);
    // A --quick run (short windows) against a full one measures a different warm-up state.
    differ(&mut r, "warm-up (ms)", &o.warmup_ms, &n.warmup_ms);
    differ(
        &mut r,
        "measured window (ms)",
        &o.duration_ms,
        &n.duration_ms,
    );
    let (lo, ln) = (&o.limits, &n.limits);
    if lo.server_cpus != ln.server_cpus || lo.loadgen_cpus != ln.loadgen_cpus {
        r.push(format!(
            "pinning differs: server {:?} / generator {:?} vs server {:?} / generator {:?}",
            lo.server_cpus, lo.loadgen_cpus, ln.server_cpus, ln.loadgen_cpus
        ));
    }
    if lo.cpu_quota != ln.cpu_quota {
        r.push(format!(
            "CPU quota differs: {:?} vs {:?}",
            lo.cpu_quota, ln.cpu_quota
        ));
    }
    if lo.memory_max_bytes != ln.memory_max_bytes {
        r.push(format!(
            "memory limit differs: {:?} vs {:?} bytes",
            lo.memory_max_bytes, ln.memory_max_bytes
        ));
    }
    differ(&mut r, "service workers", &lo.workers, &ln.workers);
    r
}
