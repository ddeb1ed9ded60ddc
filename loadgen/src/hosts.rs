//! One load over several generator hosts: `LoadSpec::split` gives each host its share, and
//! `Report::merge` makes one report from the hosts' reports. Every latency figure comes from the hosts' full HDR histograms added together —
//! the percentiles of all requests, exactly as one generator would have recorded them — never
//! from averaging percentiles. Counts, bytes, rates and the generators' CPU are sums.
//!
//! What cannot be exact without synchronised clocks is said where it is: the hosts' windows
//! start a few milliseconds apart, so `window_s` is the longest of them and the throughput
//! is the sum of each host's own rate; the per-second timeline is aligned by second index,
//! and its per-second p50/p99 are the highest of the hosts' (each host's own timeline stays
//! in the cell file).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::hdr::{hdr_v2_b64, hdr_v2_decode};
use crate::merge::percentiles;
use crate::report::{Generator, Interval, OpenLoopHistograms, Percentiles, Report, Saturation};
use crate::spec::{LoadModel, LoadSpec};
use crate::worker::plan::split_even;

/// The sum of the histograms (an auto-resizing target, so differing maxima add).
fn add_all<'a>(encoded: impl Iterator<Item = &'a str>) -> Result<Histogram<u64>, String> {
    let mut sum: Option<Histogram<u64>> = None;
    for b64 in encoded {
        let h = hdr_v2_decode(b64)?;
        let into = match &mut sum {
            Some(s) => s,
            None => sum.insert({
                let mut e = Histogram::new(h.sigfig()).map_err(|e| format!("{e:?}"))?;
                e.auto(true);
                e
            }),
        };
        into.add(&h)
            .map_err(|e| format!("cannot add histograms: {e:?}"))?;
    }
    sum.ok_or_else(|| "no histograms to merge".to_string())
}

impl LoadSpec {
    /// The load for each of `n` generator hosts: connections split into near-equal whole
    /// parts, larger ones first (64 → 32+32, 5 → 3+2), an open loop's rate divided evenly,
    /// and no more threads than connections.
    pub fn split(&self, n: u32) -> Vec<LoadSpec> {
        let n = n.max(1);
        (0..n)
            .map(|i| {
                let mut s = self.clone();
                let part = |total: u32| split_even(u64::from(total), n, i) as u32;
                s.model = match self.model {
                    LoadModel::Closed {
                        connections,
                        pipeline,
                    } => LoadModel::Closed {
                        connections: part(connections),
                        pipeline,
                    },
                    LoadModel::Open {
                        rate_per_s,
                        connections,
                        coalesce_us,
                    } => LoadModel::Open {
                        rate_per_s: rate_per_s / f64::from(n),
                        connections: part(connections),
                        coalesce_us,
                    },
                };
                s.threads = s.threads.min(s.connections()).max(1);
                s
            })
            .collect()
    }
}

impl Report {
    /// Merges `(host, report)` of every generator host of one repetition into one report;
    /// `spec` is the whole load (before it was split).
    pub fn merge(spec: &LoadSpec, parts: &[(&str, &Report)]) -> Result<Report, String> {
        let (_, first) = parts.first().ok_or("no generator reports to merge")?;
        let latency = add_all(parts.iter().map(|(_, r)| r.latency_hdr_v2_b64.as_str()))?;
        let latency_us = percentiles(&latency);
        let open: Vec<&OpenLoopHistograms> = parts
            .iter()
            .filter_map(|(_, r)| r.open_loop_hdr_v2_b64.as_ref())
            .collect();
        let o = if open.is_empty() {
            None
        } else if open.len() != parts.len() {
            return Err("some generator reports carry open-loop histograms and some do not".into());
        } else {
            Some(OpenMerged::of(&open)?)
        };
        let mut counts = crate::report::Counts::default();
        let mut connections = crate::report::ConnectionCounts::default();
        let mut status_counts: BTreeMap<u16, u64> = BTreeMap::new();
        let mut verdict = Saturation::default();
        let mut problems = Vec::new();
        for (host, r) in parts {
            counts += &r.counts;
            connections += &r.connections;
            for (code, n) in &r.status_counts {
                *status_counts.entry(*code).or_default() += n;
            }
            verdict.saturated |= r.verdict.saturated;
            verdict
                .reasons
                .extend(r.verdict.reasons.iter().map(|x| format!("{host}: {x}")));
            problems.extend(r.problems.iter().map(|x| format!("{host}: {x}")));
            if r.loadgen_version != first.loadgen_version {
                problems.push(format!(
                    "{host}: loadgen {} differs from {}",
                    r.loadgen_version, first.loadgen_version
                ));
            }
        }
        // Every host's set-up times, where every host recorded them (no partial sum).
        let setups: Vec<&str> = parts
            .iter()
            .filter_map(|(_, r)| r.connection_setup.as_ref().map(|s| s.hdr_v2_b64.as_str()))
            .collect();
        let connection_setup = if setups.len() == parts.len() {
            let h = add_all(setups.into_iter())?;
            Some(crate::report::Setup {
                us: percentiles(&h),
                hdr_v2_b64: hdr_v2_b64(&h)?,
            })
        } else {
            None
        };
        let sum = |f: fn(&Report) -> f64| parts.iter().map(|(_, r)| f(r)).sum::<f64>();
        Ok(Report {
            schema_version: first.schema_version,
            loadgen_version: first.loadgen_version.clone(),
            spec: spec.clone(),
            started_unix_ms: parts
                .iter()
                .map(|(_, r)| r.started_unix_ms)
                .min()
                .unwrap_or(0),
            window_s: parts.iter().map(|(_, r)| r.window_s).fold(0.0, f64::max),
            requests_per_s: sum(|r| r.requests_per_s),
            ok_per_s: sum(|r| r.ok_per_s),
            latency_us: latency_us.clone(),
            service_time_us: o
                .as_ref()
                .map_or_else(|| latency_us.clone(), |o| o.service_time_us.clone()),
            send_lag_us: o.as_ref().map(|o| o.send_lag_us.clone()),
            schedule_lag_us: o.as_ref().map(|o| o.schedule_lag_us.clone()),
            wake_lag_us: o.as_ref().and_then(|o| o.wake_lag_us.clone()),
            own_lag_us: o.as_ref().and_then(|o| o.own_lag_us.clone()),
            counts,
            connections,
            connection_setup,
            tls: first.tls.clone(),
            status_counts,
            bytes_read: parts.iter().map(|(_, r)| r.bytes_read).sum(),
            bytes_written: parts.iter().map(|(_, r)| r.bytes_written).sum(),
            timeline: timeline(parts),
            generator: generator(parts),
            verdict,
            latency_hdr_v2_b64: hdr_v2_b64(&latency)?,
            open_loop_hdr_v2_b64: o.map(|o| o.histograms),
            problems,
        })
    }
}

/// The open-loop histograms of every host, added, and their percentiles.
struct OpenMerged {
    histograms: OpenLoopHistograms,
    service_time_us: Percentiles,
    send_lag_us: Percentiles,
    schedule_lag_us: Percentiles,
    wake_lag_us: Option<Percentiles>,
    own_lag_us: Option<Percentiles>,
}

impl OpenMerged {
    fn of(open: &[&OpenLoopHistograms]) -> Result<Self, String> {
        let service = add_all(open.iter().map(|o| o.service_time.as_str()))?;
        let send = add_all(open.iter().map(|o| o.send_lag.as_str()))?;
        let schedule = add_all(open.iter().map(|o| o.schedule_lag.as_str()))?;
        // Only when every host reported it: a partial sum would pass for the whole.
        let all = |f: fn(&OpenLoopHistograms) -> Option<&str>| -> Result<_, String> {
            let parts: Option<Vec<&str>> = open.iter().map(|o| f(o)).collect();
            parts.map(|p| add_all(p.into_iter())).transpose()
        };
        let wake = all(|o| o.wake_lag.as_deref())?;
        let own = all(|o| o.own_lag.as_deref())?;
        Ok(Self {
            histograms: OpenLoopHistograms {
                service_time: hdr_v2_b64(&service)?,
                send_lag: hdr_v2_b64(&send)?,
                schedule_lag: hdr_v2_b64(&schedule)?,
                wake_lag: wake.as_ref().map(hdr_v2_b64).transpose()?,
                own_lag: own.as_ref().map(hdr_v2_b64).transpose()?,
            },
            service_time_us: percentiles(&service),
            send_lag_us: percentiles(&send),
            schedule_lag_us: percentiles(&schedule),
            wake_lag_us: wake.as_ref().map(percentiles),
            own_lag_us: own.as_ref().map(percentiles),
        })
    }
}

/// Seconds aligned by index: sums of responses, rates and errors; the highest p50/p99.
fn timeline(parts: &[(&str, &Report)]) -> Vec<Interval> {
    let n = parts
        .iter()
        .map(|(_, r)| r.timeline.len())
        .max()
        .unwrap_or(0);
    (0..n)
        .map(|i| {
            let mut iv = Interval {
                t_s: i as u32,
                ..Interval::default()
            };
            for s in parts.iter().filter_map(|(_, r)| r.timeline.get(i)) {
                iv.responses += s.responses;
                iv.requests_per_s += s.requests_per_s;
                iv.errors += s.errors;
                iv.p50_us = iv.p50_us.max(s.p50_us);
                iv.p99_us = iv.p99_us.max(s.p99_us);
            }
            iv
        })
        .collect()
}

/// All hosts' generator threads together.
fn generator(parts: &[(&str, &Report)]) -> Generator {
    let gens = || parts.iter().map(|(_, r)| &r.generator);
    let cpu_s: f64 = gens().map(|g| g.cpu_user_s + g.cpu_sys_s).sum();
    let responses: f64 = parts
        .iter()
        .map(|(_, r)| r.requests_per_s * r.window_s)
        .sum();
    let sent: u64 = parts.iter().map(|(_, r)| r.counts.sent).sum();
    let wakeups: f64 = parts
        .iter()
        .map(|(_, r)| r.generator.wakeups_per_request * r.counts.sent as f64)
        .sum();
    let mut allowed: Vec<u32> = gens()
        .flat_map(|g| g.allowed_cpus.iter().copied())
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    Generator {
        threads: gens().map(|g| g.threads).sum(),
        cpu_user_s: gens().map(|g| g.cpu_user_s).sum(),
        cpu_sys_s: gens().map(|g| g.cpu_sys_s).sum(),
        cpu_us_per_request: if responses > 0.0 {
            cpu_s * 1e6 / responses
        } else {
            0.0
        },
        busiest_thread_busy: gens().map(|g| g.busiest_thread_busy).fold(0.0, f64::max),
        per_thread_busy: gens().flat_map(|g| g.per_thread_busy.clone()).collect(),
        per_thread_spin_wait: gens()
            .flat_map(|g| g.per_thread_spin_wait.clone())
            .collect(),
        wakeups_per_request: if sent > 0 { wakeups / sent as f64 } else { 0.0 },
        allowed_cpus: allowed,
        // Every host runs the same spec; the first says which backend (and why).
        io: gens().find_map(|g| g.io.clone()),
        cost: gens()
            .map(|g| g.cost.as_ref())
            .collect::<Option<Vec<_>>>()
            .map(|c| crate::report::OwnCost::sum(c, responses.round() as u64)),
    }
}

/// Whether two summaries hold the same count and percentiles (mean and stdev aside: float
/// sums in another order may differ in the last bit).
pub fn same_percentiles(a: &Percentiles, b: &Percentiles) -> bool {
    (
        a.samples, a.min, a.p50, a.p75, a.p90, a.p99, a.p999, a.p9999, a.max,
    ) == (
        b.samples, b.min, b.p50, b.p75, b.p90, b.p99, b.p999, b.p9999, b.max,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in values {
            h.record(*v).unwrap();
        }
        h
    }

    fn spec(rate: f64) -> LoadSpec {
        LoadSpec {
            url: "http://127.0.0.1:1/ping".into(),
            model: LoadModel::Open {
                rate_per_s: rate,
                connections: 8,
                coalesce_us: crate::DEFAULT_COALESCE_US,
            },
            threads: 1,
            keepalive: true,
            duration_ms: Some(1000),
            requests: None,
            warmup_ms: 0,
            timeout_ms: 1000,
            expect_status: 200,
            expect_body_bytes: None,
            headers: vec![],
            io: crate::IoChoice::Auto,
            protocol: Default::default(),
        }
    }

    fn report(values: &[u64], lags: &[u64]) -> Report {
        let h = hist(values);
        let lag = hist(lags);
        Report {
            schema_version: 1,
            loadgen_version: "0.1.0".into(),
            spec: spec(500.0),
            started_unix_ms: 1000,
            window_s: 1.0,
            requests_per_s: values.len() as f64,
            ok_per_s: values.len() as f64,
            latency_us: percentiles(&h),
            service_time_us: percentiles(&h),
            send_lag_us: Some(percentiles(&lag)),
            schedule_lag_us: Some(percentiles(&lag)),
            wake_lag_us: Some(percentiles(&lag)),
            own_lag_us: Some(percentiles(&lag)),
            counts: crate::report::Counts {
                sent: values.len() as u64,
                ok: values.len() as u64,
                ..Default::default()
            },
            connections: Default::default(),
            connection_setup: Some(crate::report::Setup {
                us: percentiles(&lag),
                hdr_v2_b64: hdr_v2_b64(&lag).unwrap(),
            }),
            tls: None,
            status_counts: [(200, values.len() as u64)].into(),
            bytes_read: 10,
            bytes_written: 5,
            timeline: vec![],
            generator: Generator {
                threads: 1,
                cpu_user_s: 0.1,
                cpu_sys_s: 0.1,
                ..Default::default()
            },
            verdict: Saturation::default(),
            latency_hdr_v2_b64: hdr_v2_b64(&h).unwrap(),
            open_loop_hdr_v2_b64: Some(OpenLoopHistograms {
                service_time: hdr_v2_b64(&h).unwrap(),
                send_lag: hdr_v2_b64(&lag).unwrap(),
                schedule_lag: hdr_v2_b64(&lag).unwrap(),
                wake_lag: Some(hdr_v2_b64(&lag).unwrap()),
                own_lag: Some(hdr_v2_b64(&lag).unwrap()),
            }),
            problems: vec![],
        }
    }

    /// Deterministic, skewed samples: one host fast with a long tail, the other slower.
    fn samples(seed: u64, n: usize, scale: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 33) % 10_000;
                scale + u * u / 1000
            })
            .collect()
    }

    #[test]
    fn merged_percentiles_equal_those_of_all_samples() {
        let a = samples(1, 20_000, 40);
        let b = samples(2, 7_000, 900);
        let lag_a = samples(3, 20_000, 1);
        let lag_b = samples(4, 7_000, 5);
        let (ra, rb) = (report(&a, &lag_a), report(&b, &lag_b));
        let m = Report::merge(&spec(1000.0), &[("gen1", &ra), ("gen2", &rb)]).unwrap();
        let all: Vec<u64> = a.iter().chain(&b).copied().collect();
        let lags: Vec<u64> = lag_a.iter().chain(&lag_b).copied().collect();
        let want = percentiles(&hist(&all));
        assert!(
            same_percentiles(&m.latency_us, &want),
            "{:?} vs {want:?}",
            m.latency_us
        );
        assert!((m.latency_us.mean - want.mean).abs() < 1e-6);
        assert!(same_percentiles(&m.service_time_us, &want));
        let want_lag = percentiles(&hist(&lags));
        assert!(same_percentiles(m.send_lag_us.as_ref().unwrap(), &want_lag));
        assert!(same_percentiles(m.wake_lag_us.as_ref().unwrap(), &want_lag));
        let setup = &m.connection_setup.as_ref().unwrap().us;
        assert!(same_percentiles(setup, &want_lag));
        // A host without the wake-up histogram (an older loadgen): no partial sum.
        let mut old = rb.clone();
        old.open_loop_hdr_v2_b64.as_mut().unwrap().wake_lag = None;
        let m2 = Report::merge(&spec(1000.0), &[("gen1", &ra), ("gen2", &old)]).unwrap();
        assert_eq!(m2.wake_lag_us, None);
        assert!(same_percentiles(m2.own_lag_us.as_ref().unwrap(), &want_lag));
        // The merged histogram round-trips too.
        let back = percentiles(&hdr_v2_decode(&m.latency_hdr_v2_b64).unwrap());
        assert!(same_percentiles(&back, &want));
        // Averaging the hosts' p99s would have been far off: the merge is not an average.
        let avg = (ra.latency_us.p99 + rb.latency_us.p99) / 2;
        assert_ne!(avg, m.latency_us.p99);
        assert_eq!(m.counts.sent, 27_000);
        assert_eq!(m.status_counts[&200], 27_000);
        assert_eq!(m.requests_per_s, 27_000.0);
        assert_eq!(m.generator.threads, 2);
        assert_eq!(m.spec, spec(1000.0));
    }

    fn closed(connections: u32) -> LoadSpec {
        LoadSpec {
            model: LoadModel::Closed {
                connections,
                pipeline: 4,
            },
            threads: 2,
            ..spec(1.0)
        }
    }

    #[test]
    fn counts_split_into_near_equal_parts() {
        let conns = |total: u32, n: u32| -> Vec<u32> {
            closed(total)
                .split(n)
                .iter()
                .map(|s| s.connections())
                .collect()
        };
        assert_eq!(conns(64, 2), [32, 32]);
        assert_eq!(conns(5, 2), [3, 2]);
        assert_eq!(conns(7, 3), [3, 2, 2]);
        assert_eq!(conns(4, 1), [4]);
    }

    #[test]
    fn load_is_split_by_connections_or_rate() {
        let [a, b] = <[LoadSpec; 2]>::try_from(closed(3).split(2)).unwrap();
        assert_eq!(
            a.model,
            LoadModel::Closed {
                connections: 2,
                pipeline: 4
            }
        );
        assert_eq!(
            b.model,
            LoadModel::Closed {
                connections: 1,
                pipeline: 4
            }
        );
        assert_eq!((a.threads, b.threads), (2, 1));
        let open = LoadSpec {
            model: LoadModel::Open {
                rate_per_s: 5000.0,
                connections: 64,
                coalesce_us: crate::DEFAULT_COALESCE_US,
            },
            threads: 2,
            ..spec(1.0)
        };
        for share in open.split(2) {
            assert_eq!(
                share.model,
                LoadModel::Open {
                    rate_per_s: 2500.0,
                    connections: 32,
                    coalesce_us: crate::DEFAULT_COALESCE_US,
                }
            );
        }
    }
}
