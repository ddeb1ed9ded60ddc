//! Authored repetitions (`matrix run --fake-reps OUTCOMES.toml`, hidden, as hyperfine's
//! debug mode authors timings): a small file says what each cell's repetitions measured —
//! or how they failed — and the real schedule, adaptive stops, drift series, summaries,
//! verdicts, calibration, results.md and the page run on it with no process started. The
//! tests of those decisions run on it in milliseconds, on numbers chosen to decide them.
//!
//! ```toml
//! [[cell]]                    # the first entry that matches a cell authors it
//! service = "b"               # any of service, scenario, level, profile; absent: any
//! req_per_s = 5000.0          # closed loop (an open loop runs at its offered rate)
//! cpu_us_per_request = 120.0  # the server's
//! spread_pct = 0.5            # each repetition's deviation, a fixed pattern seeded by the cell
//! startup_us = 2500.0
//! idle_rss_bytes = 3145728
//! peak_rss_bytes = 6815744
//! fail = { stage = "startup", reason = "exit status: 3" }   # every repetition fails so
//! ```
//!
//! Latency follows from the numbers: Little's law in a closed loop, a single-server queue in
//! an open one. A cell no entry matches fails, saying so.

use std::path::Path;

use hdrhistogram::Histogram;
use loadgen::report::{Counts, Generator, Percentiles, Saturation};
use loadgen::{LoadModel, Report};
use serde::Deserialize;

use crate::interrupt;
use crate::progress::Progress;
use crate::results::outcome::{RepBody, RepOutcome, StartOutcome};
use crate::results::schema::{
    CellFlamegraph, CellSpec, RepResult, ServerUsage, Stage, StageError, StartRecord,
};
use crate::schedule::RepRunner;

/// What `replay_of` says of an authored run: nothing in it was measured.
pub const AUTHORED: &str = "authored";

/// The file: its entries, in order.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    cell: Vec<Entry>,
}

/// One entry: which cells it authors, and what their repetitions measured.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    service: Option<String>,
    scenario: Option<String>,
    level: Option<String>,
    profile: Option<String>,
    #[serde(default = "default_rps")]
    req_per_s: f64,
    cpu_us_per_request: Option<f64>,
    #[serde(default = "default_spread")]
    spread_pct: f64,
    #[serde(default = "default_startup")]
    startup_us: f64,
    #[serde(default = "default_idle_rss")]
    idle_rss_bytes: u64,
    #[serde(default = "default_peak_rss")]
    peak_rss_bytes: u64,
    fail: Option<Failure>,
}

fn default_rps() -> f64 {
    10_000.0
}
fn default_spread() -> f64 {
    0.5
}
fn default_startup() -> f64 {
    2_500.0
}
fn default_idle_rss() -> u64 {
    3 << 20
}
fn default_peak_rss() -> u64 {
    13 << 19
}

/// How every repetition of a cell fails.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Failure {
    stage: Stage,
    reason: String,
}

impl Entry {
    fn matches(&self, c: &CellSpec) -> bool {
        let is = |want: &Option<String>, got: &str| want.as_deref().is_none_or(|w| w == got);
        is(&self.service, &c.service)
            && is(&self.scenario, &c.scenario)
            && is(&self.level, &c.level)
            && is(&self.profile, &c.profile)
    }

    fn check(&self, i: usize) -> anyhow::Result<()> {
        let positive = [
            ("req_per_s", Some(self.req_per_s)),
            ("cpu_us_per_request", self.cpu_us_per_request),
            ("startup_us", Some(self.startup_us)),
        ];
        for (name, v) in positive {
            if let Some(v) = v {
                anyhow::ensure!(
                    v.is_finite() && v > 0.0,
                    "cell entry {}: {name} must be a positive number, not {v}",
                    i + 1
                );
            }
        }
        anyhow::ensure!(
            self.spread_pct.is_finite() && (0.0..50.0).contains(&self.spread_pct),
            "cell entry {}: spread_pct must be at least 0 and below 50, not {}",
            i + 1,
            self.spread_pct
        );
        Ok(())
    }
}

/// Zero-mean spread pattern (sum = 0), scaled by the entry's `spread_pct`.
const PATTERN: [f64; 5] = [0.9, -1.0, 0.4, -0.7, 0.4];

/// Repetition `rep`'s factor in a cell seeded by `key` (two cells of one entry differ).
fn jitter(spread_pct: f64, key: &str, rep: u32, k: usize) -> f64 {
    let seed = key
        .bytes()
        .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
    let i = seed.wrapping_add(rep as usize).wrapping_add(k);
    1.0 + spread_pct / 100.0 * PATTERN[i % PATTERN.len()]
}

/// Repetitions authored by a file's entries.
pub struct Authored {
    entries: Vec<Entry>,
}

impl Authored {
    pub fn open(path: &Path) -> anyhow::Result<Authored> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("--fake-reps {}: {e}", path.display()))?;
        let f: File = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("--fake-reps {}: {e}", path.display()))?;
        for (i, e) in f.cell.iter().enumerate() {
            e.check(i)
                .map_err(|e| anyhow::anyhow!("--fake-reps {}: {e}", path.display()))?;
        }
        Ok(Authored { entries: f.cell })
    }

    fn outcome(&self, cell: &CellSpec, rep: u32) -> RepOutcome {
        let Some(e) = self.entries.iter().find(|e| e.matches(cell)) else {
            return RepOutcome::failed(StageError::at(
                Stage::Spawn,
                format!("--fake-reps: no entry authors cell {}", cell.key),
            ));
        };
        if let Some(f) = &e.fail {
            return RepOutcome::failed(StageError::at(f.stage, f.reason.clone()));
        }
        let j = |k| jitter(e.spread_pct, &cell.key, rep, k);
        let rps = match cell.load {
            LoadModel::Open { rate_per_s, .. } => rate_per_s,
            LoadModel::Closed { .. } => e.req_per_s * j(0),
        };
        let cpu = e.cpu_us_per_request.unwrap_or(0.8e6 / e.req_per_s) * j(3);
        let window_s = cell.duration_ms as f64 / 1000.0;
        let start = StartRecord {
            rep,
            pid: 1000 + rep,
            port: 40000,
            connect_us: Some((e.startup_us * j(1) * 0.9) as u64),
            first_200_us: Some((e.startup_us * j(1)) as u64),
            launch_us: None,
            warmup_first_200_us: None,
            idle_rss_bytes: Some((e.idle_rss_bytes as f64 * j(2)) as u64),
            stop: None,
        };
        let result = RepResult {
            rep,
            started_unix_ms: 1_780_000_000_000 + u64::from(rep) * 2000,
            session: None,
            report: report(cell, rps, cpu),
            server: ServerUsage {
                samples: (window_s * 1000.0 / crate::sample::INTERVAL_MS as f64) as u32,
                sample_interval_ms: crate::sample::INTERVAL_MS,
                cpu_us: Some(cpu * rps * window_s),
                cpu_us_per_request: Some(cpu),
                cpu_cores_busy: Some((cpu * rps / 1e6).min(1.0)),
                rss_mean_bytes: Some((e.peak_rss_bytes as f64 * 0.9) as u64),
                rss_peak_bytes: Some((e.peak_rss_bytes as f64 * j(4)) as u64),
                vmhwm_bytes: Some(e.peak_rss_bytes),
                threads: Some(2),
                cpu_unmeasured: None,
            },
            cgroup: None,
            loadgen_exit_code: Some(0),
            floor_check: None,
            generators: vec![],
            counts: None,
            instructions: None,
        };
        RepOutcome {
            starts: vec![start],
            told: vec![StartOutcome::default()],
            body: Some(RepBody::Measured(Box::new(result))),
            failure: None,
        }
    }
}

impl RepRunner for Authored {
    fn rep(&mut self, cell: &CellSpec, rep: u32) -> RepOutcome {
        self.outcome(cell, rep)
    }

    fn profiled_rep(&mut self, _: &CellSpec, _: &Progress) -> Option<CellFlamegraph> {
        None
    }

    fn cool_down(&mut self, _ms: u64) -> bool {
        !interrupt::requested()
    }

    fn replay_of(&self) -> Option<&str> {
        Some(AUTHORED)
    }
}

/// A latency histogram with mean `mean_us` and an exponential tail, `total` samples.
pub fn latency(mean_us: f64, total: u64) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds");
    const STEPS: u64 = 2000;
    let weight = (total / STEPS).max(1);
    for i in 0..STEPS {
        let q = (i as f64 + 0.5) / STEPS as f64;
        let v = mean_us * (0.6 + 0.4 * -(1.0 - q).ln());
        h.record_n(v.max(1.0) as u64, weight).expect("record");
    }
    h
}

fn percentiles(h: &Histogram<u64>) -> Percentiles {
    Percentiles {
        samples: h.len(),
        mean: h.mean(),
        stdev: h.stdev(),
        min: h.min(),
        p50: h.value_at_quantile(0.5),
        p75: h.value_at_quantile(0.75),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        p9999: h.value_at_quantile(0.9999),
        max: h.max(),
    }
}

/// A generator's report for `spec` at `rps` against a server spending `cpu_us_per_request`:
/// latency by Little's law (closed loop) or a single-server queue (open loop, with a knee).
pub fn report(spec: &CellSpec, rps: f64, cpu_us_per_request: f64) -> Report {
    let window_s = spec.duration_ms as f64 / 1000.0;
    let total = (rps * window_s) as u64;
    let mean_us = match spec.load {
        LoadModel::Closed {
            connections,
            pipeline,
        } => f64::from(connections * pipeline) / rps * 1e6,
        LoadModel::Open { rate_per_s, .. } => {
            let rho = (rate_per_s * cpu_us_per_request / 1e6).min(0.95);
            cpu_us_per_request / (1.0 - rho)
        }
    };
    let h = latency(mean_us, total);
    let p = percentiles(&h);
    Report {
        schema_version: loadgen::report::SCHEMA_VERSION,
        loadgen_version: AUTHORED.into(),
        spec: spec.load_spec(40000),
        started_unix_ms: 1_780_000_000_000,
        window_s,
        requests_per_s: rps,
        ok_per_s: rps,
        latency_us: p.clone(),
        service_time_us: p,
        send_lag_us: None,
        schedule_lag_us: None,
        wake_lag_us: None,
        own_lag_us: None,
        counts: Counts {
            sent: total,
            ok: total,
            ..Counts::default()
        },
        connections: Default::default(),
        connection_setup: None,
        tls: None,
        status_counts: std::collections::BTreeMap::from([(200, total)]),
        bytes_read: total * 120,
        bytes_written: total * 40,
        timeline: vec![],
        generator: Generator {
            threads: 1,
            cpu_user_s: 0.4,
            cpu_sys_s: 0.6,
            cpu_us_per_request: 1e6 / rps,
            busiest_thread_busy: 0.66,
            per_thread_busy: vec![0.66],
            per_thread_spin_wait: vec![0.0],
            allowed_cpus: vec![1],
            wakeups_per_request: 0.0,
            io: None,
            cost: None,
        },
        verdict: Saturation::default(),
        latency_hdr_v2_b64: loadgen::hdr_v2_b64(&h).expect("serialize histogram"),
        open_loop_hdr_v2_b64: None,
        problems: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (std::path::PathBuf, tempdir::Dir) {
        let d = tempdir::Dir::new();
        let p = d.0.join("outcomes.toml");
        std::fs::write(&p, text).unwrap();
        (p, d)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new() -> Dir {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let p =
                    std::env::temp_dir().join(format!("pm-authored-{}-{n}", std::process::id()));
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_entry_and_the_field() {
        for (text, want) in [
            (
                "[[cell]]\nreq_per_s = -1\n",
                "cell entry 1: req_per_s must be a positive",
            ),
            (
                "[[cell]]\nspread_pct = 80\n",
                "spread_pct must be at least 0 and below 50",
            ),
            ("[[cell]]\nrps = 5\n", "unknown field `rps`"),
            (
                "[[cell]]\nfail = { stage = \"later\", reason = \"x\" }\n",
                "unknown variant `later`",
            ),
            ("[[cell]\n", "outcomes.toml"),
        ] {
            let (p, _d) = write(text);
            let e = Authored::open(&p).err().expect(text).to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn the_first_matching_entry_authors_a_cell_and_no_entry_fails_it() {
        let (p, _d) = write(
            "[[cell]]\nservice = \"b\"\nlevel = \"c1\"\nfail = { stage = \"startup\", reason = \"exit status: 3\" }\n\
             [[cell]]\nservice = \"b\"\nreq_per_s = 100.0\nspread_pct = 0.0\n",
        );
        let mut a = Authored::open(&p).unwrap();
        let mut spec = |service: &str, level: &str| {
            let mut c = crate::results::suspect::tests::spec(LoadModel::Closed {
                connections: 1,
                pipeline: 1,
            });
            (c.service, c.level) = (service.into(), level.into());
            c.key = format!("{service}__ping__{level}__pinned");
            a.rep(&c, 1)
        };
        let failed = spec("b", "c1");
        assert_eq!(
            failed.failure.map(|f| (f.stage, f.reason)),
            Some((Stage::Startup, "exit status: 3".to_owned()))
        );
        let ok = spec("b", "c4");
        assert_eq!(ok.measured().map(|r| r.report.requests_per_s), Some(100.0));
        let none = spec("a", "c4");
        assert!(
            none.failure
                .unwrap()
                .reason
                .contains("no entry authors cell a__ping__c4")
        );
    }
}
