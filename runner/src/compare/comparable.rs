//! Whether two result sets may be compared at all: same hardware and load generator for the
//! run, and for each matched cell the same load model, pinning, limits and window lengths.
//! A difference here makes every delta meaningless, so it is a refusal unless `--force`.
//! The load generator is matched by its method identity, not the repository's commit
//! (`method`).

use std::collections::BTreeMap;

use crate::results::schema::{CellResult, CellSpec, CellSummary, RunRecord};

use crate::results::set::ResultSet;

use super::method;

/// Run-level warnings: what could not be checked (a run older than loadgen's identity), and
/// syscalls counted two ways.
pub fn run_warnings(old: &ResultSet, new: &ResultSet) -> Vec<String> {
    let mut w = match (&old.run, &new.run) {
        (Some(o), Some(n)) => method::warnings(&o.environment, &n.environment),
        _ => Vec::new(),
    };
    w.extend(syscall_method_warning(
        &old.results.cells,
        &new.results.cells,
    ));
    w
}

/// How a run counted syscalls: `Some(true)` over exact request counts, `Some(false)` in the
/// older 700 ms window, `None` not at all.
fn exact_syscalls(cells: &[CellSummary]) -> Option<bool> {
    let counted: Vec<_> = cells
        .iter()
        .filter_map(|c| c.counted.as_ref())
        .filter(|k| k.server.syscalls.is_some())
        .collect();
    (!counted.is_empty()).then(|| counted.iter().any(|k| k.syscall_requests.is_some()))
}

/// A warning when one run counted syscalls over exact request counts and the other in the
/// older window, which read 0.4–1.2 % low against an exact count (docs/counted-cost.md).
fn syscall_method_warning(old: &[CellSummary], new: &[CellSummary]) -> Option<String> {
    let (o, n) = (exact_syscalls(old)?, exact_syscalls(new)?);
    let how = |exact: bool| {
        if exact {
            "over exact request counts"
        } else {
            "in a 700 ms window cut from perf's intervals"
        }
    };
    (o != n).then(|| {
        format!(
            "syscalls per request were counted differently: the old run {}, the new run {}; the older window read 0.4–1.2 % low against an exact count, so a syscalls/request difference that small may be the method's",
            how(o),
            how(n)
        )
    })
}

/// The run a side replayed (`--fake-reps`), as results.json, run.json or any cell says.
pub fn replay_of(side: &ResultSet) -> Option<&str> {
    side.results
        .replay_of
        .as_deref()
        .or_else(|| side.run.as_ref().and_then(|r| r.replay_of.as_deref()))
        .or_else(|| {
            side.results
                .cells
                .iter()
                .find_map(|c| c.replay_of.as_deref())
        })
}

/// Run-level reasons the two sides are not comparable (empty = comparable).
pub fn run_differences(old: &ResultSet, new: &ResultSet) -> Vec<String> {
    // A replay copies another run's repetitions: comparing it says nothing about a change.
    let replays: Vec<String> = [("old", old), ("new", new)]
        .into_iter()
        .filter_map(|(side, s)| {
            replay_of(s).map(|id| {
                format!(
                    "{side} side is a replay of run {id} (--fake-reps): nothing in it was \
                     measured"
                )
            })
        })
        .collect();
    let mut r = replays;
    r.extend(measured_differences(old, new));
    r
}

fn measured_differences(old: &ResultSet, new: &ResultSet) -> Vec<String> {
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
    // Another protocol is another request: never paired, whatever the cells are called.
    differ(&mut r, "protocol", &o.protocol.name(), &n.protocol.name());
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
    if o.headers != n.headers {
        let show = |h: &[String]| {
            if h.is_empty() {
                "none".to_string()
            } else {
                format!("{} ({} headers)", h.join(" | "), h.len())
            }
        };
        r.push(format!(
            "request headers differ: {} vs {}",
            show(&o.headers),
            show(&n.headers)
        ));
    }
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

/// Every reason `matrix compare` would not set one cell of two runs side by side: the runs'
/// (refused without `--force`), then the cell's own (its verdicts withheld).
pub fn cell_pair_differences(
    old: (&ResultSet, Option<&CellSpec>, &CellSummary),
    new: (&ResultSet, Option<&CellSpec>, &CellSummary),
) -> Vec<String> {
    let mut r = run_differences(old.0, new.0);
    r.extend(cell_differences(old.1, new.1));
    r.extend(io_differences(
        (old.2, old.0.cells.get(&old.2.key)),
        (new.2, new.0.cells.get(&new.2.key)),
    ));
    r
}

/// Why one cell ran on different I/O on the two sides: loadgen's backend (results.json) or
/// the service's `io_driver` (its start-up line, from the cell files). Nothing where a side
/// did not record it.
pub fn io_differences(
    old: (&CellSummary, Option<&CellResult>),
    new: (&CellSummary, Option<&CellResult>),
) -> Vec<String> {
    let mut r = Vec::new();
    if let (Some(o), Some(n)) = (&old.0.generator_io, &new.0.generator_io) {
        differ(&mut r, "load generator I/O", o, n);
    }
    let driver = |c: Option<&CellResult>| Some(c?.startup_line.as_ref()?.io_driver.clone());
    if let (Some(o), Some(n)) = (driver(old.1), driver(new.1)) {
        differ(&mut r, "service I/O driver", &o, &n);
    }
    r
}

#[cfg(test)]
mod io_tests {
    use super::*;

    /// F15: a cell measured with other request headers is another request.
    #[test]
    fn cells_with_other_request_headers_are_run_differently() {
        let plain = crate::results::suspect::tests::spec(loadgen::LoadModel::Closed {
            connections: 1,
            pipeline: 1,
        });
        let mut browser = plain.clone();
        browser.headers = vec!["User-Agent: x".into(), "Accept: */*".into()];
        let why = cell_differences(Some(&plain), Some(&browser));
        assert_eq!(
            why,
            vec![
                "request headers differ: none vs User-Agent: x | Accept: */* (2 headers)"
                    .to_string()
            ]
        );
        assert!(cell_differences(Some(&browser), Some(&browser.clone())).is_empty());
        // What loadgen is given (and the instruction count sends): the same, in order.
        assert_eq!(
            browser.load_spec(1).headers,
            vec![
                ("User-Agent".to_string(), "x".to_string()),
                ("Accept".to_string(), "*/*".to_string())
            ]
        );
    }

    #[test]
    fn cells_of_other_protocols_are_never_paired() {
        let h1 = crate::results::suspect::tests::spec(loadgen::LoadModel::Closed {
            connections: 64,
            pipeline: 10,
        });
        let h2 = CellSpec {
            protocol: loadgen::Protocol::H2c,
            ..h1.clone()
        };
        assert_eq!(
            cell_differences(Some(&h1), Some(&h2)),
            vec!["protocol differs: http/1.1 vs h2c".to_string()]
        );
        assert_eq!(h2.load_spec(1).protocol, loadgen::Protocol::H2c);
    }

    #[test]
    fn a_generator_on_io_uring_against_one_on_epoll_is_run_differently() {
        let cell = |io: Option<&str>| CellSummary {
            generator_io: io.map(str::to_owned),
            ..Default::default()
        };
        let (uring, epoll, unknown) = (
            cell(Some("io_uring (multishot)")),
            cell(Some("epoll")),
            cell(None),
        );
        assert_eq!(
            io_differences((&uring, None), (&epoll, None)),
            vec!["load generator I/O differs: io_uring (multishot) vs epoll".to_string()]
        );
        assert!(io_differences((&uring, None), (&uring, None)).is_empty());
        assert!(io_differences((&unknown, None), (&epoll, None)).is_empty());
    }
}

#[cfg(test)]
mod syscall_method_tests {
    use super::*;
    use crate::results::schema::{CountedSummary, PerRequestSummary, Stat};

    fn side(exact: Option<bool>) -> Vec<CellSummary> {
        let counted = exact.map(|e| CountedSummary {
            server: PerRequestSummary {
                syscalls: Some(Stat {
                    n: 3,
                    median: 3.0,
                    ..Default::default()
                }),
                ..Default::default()
            },
            syscall_requests: e.then_some((5_000, 15_000)),
            ..Default::default()
        });
        vec![CellSummary {
            counted,
            ..Default::default()
        }]
    }

    #[test]
    fn syscalls_counted_two_ways_are_a_warning_and_one_way_is_not() {
        let w = syscall_method_warning(&side(Some(false)), &side(Some(true))).unwrap();
        assert!(w.contains("the old run in a 700 ms window"), "{w}");
        assert!(w.contains("the new run over exact request counts"), "{w}");
        assert_eq!(
            syscall_method_warning(&side(Some(true)), &side(Some(true))),
            None
        );
        assert_eq!(
            syscall_method_warning(&side(Some(false)), &side(Some(false))),
            None
        );
        assert_eq!(
            syscall_method_warning(&side(None), &side(Some(true))),
            None,
            "not counted"
        );
    }
}
