//! A cell's aggregate over its repetitions (the row results.json and results.md show).

use std::collections::BTreeMap;

use loadgen::LoadModel;

use super::schema::{
    CellResult, CellSpec, CellStatus, CellSummary, CountedSummary, CrateCost,
    FUNCTION_MIN_PER_REQUEST, FunctionCost, HardwareCounts, HardwareSummary, InstructionCount,
    LatencySummary, PerRequestSummary, ProcessCounts, RepCounts, RepResult, SCHEMA_VERSION, Stat,
};
use crate::results::churn;
use crate::results::stats::{self, median};
use crate::results::suspect;

/// The statistics of `stats` as the schema's `Stat`; None for an empty slice.
pub fn summarize(xs: &[f64]) -> Option<Stat> {
    let m = stats::mean(xs)?;
    let ci = stats::ci95(xs);
    Some(Stat {
        n: xs.len() as u32,
        mean: m,
        median: stats::median(xs)?,
        stdev: stats::stdev(xs),
        cv: stats::cv(xs),
        ci95_low: ci.map(|c| c.0),
        ci95_high: ci.map(|c| c.1),
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

fn med_u64(xs: impl Iterator<Item = u64>) -> u64 {
    let v: Vec<f64> = xs.map(|x| x as f64).collect();
    median(&v).unwrap_or(0.0).round() as u64
}

/// The values that were measured, as the f64 samples `summarize` takes; missing ones are
/// skipped, not counted as zero.
fn measured_f64(xs: impl Iterator<Item = Option<u64>>) -> Vec<f64> {
    xs.flatten().map(|x| x as f64).collect()
}

/// Sum of the counters that were read; None when no repetition had one (no cgroup), so
/// "not measured" stays distinct from 0.
fn sum_measured(xs: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    xs.flatten().reduce(|a, b| a + b)
}

impl CellResult {
    /// A cell before its first repetition: `partial`, nothing measured.
    pub fn new(run_id: &str, cell: &CellSpec) -> CellResult {
        let mut r = CellResult {
            schema_version: SCHEMA_VERSION,
            run_id: run_id.into(),
            cell: cell.clone(),
            status: CellStatus::Partial,
            replay_of: None,
            failure: None,
            startup_line: None,
            limits: None,
            verification: vec![],
            starts: vec![],
            reps: vec![],
            churn: vec![],
            summary: Default::default(),
            flamegraph: None,
            stopped: None,
        };
        r.summary = summarize_cell(&r);
        r
    }
}

pub fn summarize_cell(c: &CellResult) -> CellSummary {
    let reps: Vec<_> = c.reps.iter().filter(|r| r.rep > 0).collect();
    let rps: Vec<f64> = reps.iter().map(|r| r.report.requests_per_s).collect();
    let latency = (!reps.is_empty()).then(|| {
        let l = |f: fn(&loadgen::report::Percentiles) -> u64| {
            med_u64(reps.iter().map(|r| f(&r.report.latency_us)))
        };
        LatencySummary {
            mean_us: median(
                &reps
                    .iter()
                    .map(|r| r.report.latency_us.mean)
                    .collect::<Vec<_>>(),
            )
            .unwrap_or(0.0),
            p50_us: l(|p| p.p50),
            p90_us: l(|p| p.p90),
            p99_us: l(|p| p.p99),
            p999_us: l(|p| p.p999),
            max_us: reps
                .iter()
                .map(|r| r.report.latency_us.max)
                .max()
                .unwrap_or(0),
        }
    });
    let startup = measured_f64(c.starts.iter().map(|s| s.first_200_us));
    let idle = measured_f64(c.starts.iter().map(|s| s.idle_rss_bytes));
    let rss_mean = measured_f64(reps.iter().map(|r| r.server.rss_mean_bytes));
    let cpu: Vec<f64> = reps
        .iter()
        .filter_map(|r| r.server.cpu_us_per_request)
        .collect();
    let gen_cpu: Vec<f64> = reps
        .iter()
        .map(|r| r.report.generator.cpu_us_per_request)
        .collect();
    let throttled = sum_measured(reps.iter().map(|r| r.cgroup.as_ref()?.nr_throttled));
    let ooms = sum_measured(reps.iter().map(|r| r.cgroup.as_ref()?.oom_kills));
    let reasons = suspect::suspect_reasons(c);
    CellSummary {
        key: c.cell.key.clone(),
        service: c.cell.service.clone(),
        scenario: c.cell.scenario.clone(),
        level: c.cell.level.clone(),
        profile: c.cell.profile.clone(),
        status: Some(c.status),
        replay_of: c.replay_of.clone(),
        n: if c.cell.churn.is_some() {
            c.churn.iter().filter(|r| r.rep > 0).count() as u32
        } else {
            reps.len() as u32
        },
        requests_per_s: summarize(&rps),
        latency,
        startup_us: summarize(&startup),
        idle_rss_bytes: summarize(&idle),
        rss_mean_bytes: summarize(&rss_mean),
        rss_peak_bytes: reps.iter().filter_map(|r| r.server.rss_peak_bytes).max(),
        server_cpu_us_per_request: summarize(&cpu),
        loadgen_cpu_us_per_request: summarize(&gen_cpu),
        offered_rate_per_s: match c.cell.load {
            LoadModel::Open { rate_per_s, .. } => Some(rate_per_s),
            LoadModel::Closed { .. } => None,
        },
        generator_saturated: reps.iter().any(|r| r.generator_saturated(&c.cell.limits)),
        errors: reps
            .iter()
            .map(|r| r.report.counts.errors.total() + r.report.counts.non_2xx)
            .sum(),
        timeouts: reps.iter().map(|r| r.report.counts.timeouts).sum(),
        cpu_throttled_periods: throttled,
        oom_kills: ooms,
        verification_passed: (!c.verification.is_empty())
            .then(|| c.verification.iter().all(|v| v.passed)),
        deviations: c
            .startup_line
            .as_ref()
            .map(|b| b.deviations.iter().map(|d| d.id.clone()).collect())
            .unwrap_or_default(),
        suspect: !reasons.is_empty(),
        suspect_reasons: reasons,
        failure: c.failure.as_ref().map(ToString::to_string),
        churn: c.cell.churn.map(|s| churn::summarize(&s, &c.churn)),
        stopped: c.stopped.clone(),
        counted: counted(&reps),
        generator_io: generator_io(&reps),
        connection_setup_p50_us: summarize(
            &reps
                .iter()
                .filter_map(|r| Some(r.report.connection_setup.as_ref()?.us.p50 as f64))
                .collect::<Vec<_>>(),
        ),
        tls: reps.iter().find_map(|r| r.report.tls.clone()),
    }
}

/// loadgen's backend over the measured repetitions, each that ran once, in order.
fn generator_io(reps: &[&RepResult]) -> Option<String> {
    use loadgen::report::{IoBackend, Receive};
    let mut seen: Vec<&str> = Vec::new();
    for io in reps.iter().filter_map(|r| r.report.generator.io.as_ref()) {
        let label = match (io.backend, io.receive.as_ref().map(|r| r.mode)) {
            (IoBackend::Epoll, _) => "epoll",
            (IoBackend::Uring, Some(Receive::Multishot)) => "io_uring (multishot)",
            (IoBackend::Uring, Some(Receive::OneShot)) => "io_uring (one-shot)",
            (IoBackend::Uring, None) => "io_uring",
        };
        if !seen.contains(&label) {
            seen.push(label);
        }
    }
    (!seen.is_empty()).then(|| seen.join(" + "))
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
            top_syscalls: top_syscalls(counts, 3),
            top_syscalls_unmeasured: counts
                .iter()
                .find_map(|c| c.syscalls_by_name_unmeasured.clone()),
            hardware: hardware(counts),
            kernel: kernel(counts),
            kernel_unmeasured: counts
                .iter()
                .filter_map(|c| c.kernel.as_ref())
                .flat_map(|k| k.unmeasured.iter())
                .fold(BTreeMap::new(), |mut m, (e, why)| {
                    m.entry(e.clone()).or_insert_with(|| why.clone());
                    m
                }),
        }
    }
}

/// Kernel events per request by tracepoint over the repetitions that counted each (a
/// repetition that could not count one is left out of its statistic, never read as 0).
fn kernel(counts: &[&ProcessCounts]) -> BTreeMap<String, Stat> {
    let mut events: Vec<&str> = Vec::new();
    for k in counts.iter().filter_map(|c| c.kernel.as_ref()) {
        for e in k.counts.keys() {
            if !events.contains(&e.as_str()) {
                events.push(e);
            }
        }
    }
    events
        .into_iter()
        .filter_map(|e| {
            let v: Vec<f64> = counts
                .iter()
                .filter_map(|c| c.kernel_per_request(e))
                .collect();
            Some((e.to_owned(), summarize(&v)?))
        })
        .collect()
}

/// Hardware counters per request over the repetitions that recorded them; `None` where none
/// did (runs before them, and the generator).
fn hardware(counts: &[&ProcessCounts]) -> Option<HardwareSummary> {
    let hw: Vec<&HardwareCounts> = counts.iter().filter_map(|c| c.hardware.as_ref()).collect();
    if hw.is_empty() {
        return None;
    }
    let s = |f: fn(&HardwareCounts) -> Option<f64>| {
        summarize(&hw.iter().filter_map(|h| f(h)).collect::<Vec<f64>>())
    };
    Some(HardwareSummary {
        instructions_user: s(HardwareCounts::instructions_user_per_request),
        instructions_kernel: s(HardwareCounts::instructions_kernel_per_request),
        cycles: s(HardwareCounts::cycles_per_request),
        unmeasured: hw.iter().find_map(|h| h.unmeasured.clone()),
    })
}

/// The `k` syscall names with the most per request (by their median over the repetitions
/// that named them; a name a repetition did not see counts 0 there).
fn top_syscalls(counts: &[&ProcessCounts], k: usize) -> Vec<(String, Stat)> {
    let named: Vec<&&ProcessCounts> = counts
        .iter()
        .filter(|c| !c.syscalls_by_name.is_empty())
        .collect();
    let mut names: Vec<&str> = Vec::new();
    for c in &named {
        for (n, _) in &c.syscalls_by_name {
            if !names.contains(&n.as_str()) {
                names.push(n);
            }
        }
    }
    let mut stats: Vec<(String, Stat)> = names
        .into_iter()
        .filter_map(|n| {
            let v: Vec<f64> = named
                .iter()
                .map(|c| {
                    c.syscalls_by_name
                        .iter()
                        .find(|x| x.0 == n)
                        .map_or(0.0, |x| x.1)
                })
                .collect();
            summarize(&v).map(|s| (n.to_owned(), s))
        })
        .collect();
    stats.sort_by(|a, b| {
        b.1.median
            .total_cmp(&a.1.median)
            .then_with(|| a.0.cmp(&b.0))
    });
    stats.truncate(k);
    stats
}

/// Each key's values over `rows` (a key a row lacks counting 0 there), in first-seen order.
fn by_key<'a, T: 'a>(
    rows: &[&'a [T]],
    key: impl Fn(&'a T) -> &'a str,
    value: impl Fn(&T) -> f64,
) -> Vec<(&'a str, Vec<f64>)> {
    let mut keys: Vec<&str> = Vec::new();
    for r in rows {
        for x in r.iter() {
            if !keys.contains(&key(x)) {
                keys.push(key(x));
            }
        }
    }
    keys.into_iter()
        .map(|k| {
            let v = rows
                .iter()
                .map(|r| r.iter().find(|x| key(x) == k).map_or(0.0, &value))
                .collect();
            (k, v)
        })
        .collect()
}

/// The functions of the repetitions that counted them: each one's median, those at least the
/// table's minimum, largest first.
fn instruction_functions(ins: &[&InstructionCount]) -> Vec<FunctionCost> {
    let rows: Vec<&[FunctionCost]> = ins
        .iter()
        .filter(|i| !i.functions.is_empty())
        .map(|i| i.functions.as_slice())
        .collect();
    let mut out: Vec<FunctionCost> = by_key(&rows, |f| f.function.as_str(), |f| f.per_request)
        .into_iter()
        .filter_map(|(name, v)| {
            let s = summarize(&v)?;
            let krate = rows
                .iter()
                .find_map(|r| r.iter().find(|f| f.function == name))?
                .krate
                .clone();
            (s.median.abs() >= FUNCTION_MIN_PER_REQUEST).then(|| FunctionCost {
                function: name.to_owned(),
                krate,
                per_request: s.median,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.per_request
            .total_cmp(&a.per_request)
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

/// Each crate's instructions per request over the repetitions that counted crates, largest
/// median first.
fn instruction_crates(ins: &[&InstructionCount]) -> Vec<(String, Stat)> {
    let rows: Vec<&[CrateCost]> = ins
        .iter()
        .filter(|i| !i.crates.is_empty())
        .map(|i| i.crates.as_slice())
        .collect();
    let mut out: Vec<(String, Stat)> = by_key(&rows, |c| c.krate.as_str(), |c| c.per_request)
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), summarize(&v)?)))
        .collect();
    out.sort_by(|a, b| {
        b.1.median
            .total_cmp(&a.1.median)
            .then_with(|| a.0.cmp(&b.0))
    });
    out
}

/// The counted cost of a cell's measured repetitions; `None` when none was counted (runs
/// recorded before counted cost).
pub fn counted(reps: &[&RepResult]) -> Option<CountedSummary> {
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
        instruction_functions: instruction_functions(&ins),
        instruction_crates: instruction_crates(&ins),
        tool: counted[0].tool.clone(),
        syscall_requests: counted
            .iter()
            .find_map(|c| match c.server.syscall_points[..] {
                [(a, _), (b, _)] => Some((a, b)),
                _ => None,
            }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_values_are_skipped_not_zero() {
        assert_eq!(
            measured_f64([Some(3), None, Some(5)].into_iter()),
            vec![3.0, 5.0]
        );
        assert!(measured_f64([None, None].into_iter()).is_empty());
        assert_eq!(sum_measured([Some(2), None, Some(0)].into_iter()), Some(2));
        assert_eq!(sum_measured([None, None].into_iter()), None);
        assert_eq!(sum_measured(std::iter::empty()), None);
    }

    #[test]
    fn top_syscalls_are_the_three_largest_medians_a_missing_name_counting_zero() {
        let named = |v: &[(&str, f64)]| ProcessCounts {
            syscalls_by_name: v.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            ..Default::default()
        };
        let reps = [
            named(&[
                ("read", 1.0),
                ("write", 1.0),
                ("epoll_wait", 0.03),
                ("futex", 0.5),
            ]),
            named(&[("read", 1.0), ("write", 1.0), ("epoll_wait", 0.04)]),
            named(&[
                ("read", 1.0),
                ("write", 0.99),
                ("epoll_wait", 0.02),
                ("futex", 0.5),
            ]),
            ProcessCounts::default(),
        ];
        let top = top_syscalls(&reps.iter().collect::<Vec<_>>(), 3);
        let names: Vec<(&str, f64)> = top.iter().map(|(n, s)| (n.as_str(), s.median)).collect();
        assert_eq!(names, [("read", 1.0), ("write", 1.0), ("futex", 0.5)]);
        assert_eq!(top[2].1.n, 3, "repetitions without names are left out");
        assert!(top_syscalls(&[&ProcessCounts::default()], 3).is_empty());
    }

    #[test]
    fn summarize_fills_every_field() {
        let s = summarize(&[100.0, 110.0, 90.0]).unwrap();
        assert_eq!(s.n, 3);
        assert_eq!(s.median, 100.0);
        assert_eq!(s.min, 90.0);
        assert_eq!(s.max, 110.0);
        assert!((s.cv.unwrap() - 0.1).abs() < 1e-12);
        assert!(summarize(&[]).is_none());
        let one = summarize(&[5.0]).unwrap();
        assert_eq!((one.stdev, one.cv, one.ci95_low), (None, None, None));
    }
}
