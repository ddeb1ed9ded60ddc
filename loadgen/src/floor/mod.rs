//! `loadgen --floor`: the machine's floor, measured in seconds so a runner can record it at
//! the start of every run. (a) Timer wake-up lateness on the calling thread's CPU: sleep to
//! absolute deadlines at a given rate exactly as the open-loop sender does (`clock_nanosleep`,
//! the sender's timer slack at that rate) and record how late each wake-up was, as cyclictest does. (b) The round
//! trip of a trivial loopback TCP echo served by a thread of this process. An open-loop
//! cell's send lag cannot be better than (a); its latency cannot be better than (b).

mod echo;
mod timer;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Bumped on any incompatible change to `Floor`'s serialized form.
pub const FLOOR_SCHEMA_VERSION: u32 = 1;

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorSpec {
    /// Wake-up rates for the timer measurement, per second.
    pub rates_per_s: Vec<f64>,
    /// Length of each measurement (one per rate, and the echo).
    pub duration_ms: u64,
}

/// Longest single measurement: the floor is meant to take seconds.
pub const MAX_FLOOR_MS: u64 = 10_000;
/// Fastest timer rate measured (1 µs apart).
pub const MAX_FLOOR_RATE_PER_S: f64 = 1_000_000.0;

impl FloorSpec {
    pub fn validate(&self) -> Result<(), String> {
        if self.rates_per_s.is_empty() {
            return Err("--floor-rates needs at least one rate".into());
        }
        for &r in &self.rates_per_s {
            if !(r.is_finite() && r > 0.0 && r <= MAX_FLOOR_RATE_PER_S) {
                return Err(format!(
                    "floor rate {r} must be above 0 and at most {MAX_FLOOR_RATE_PER_S} per second"
                ));
            }
        }
        if self.duration_ms == 0 || self.duration_ms > MAX_FLOOR_MS {
            return Err(format!(
                "--floor-duration must be between 1 ms and {MAX_FLOOR_MS} ms (got {} ms)",
                self.duration_ms
            ));
        }
        Ok(())
    }
}

/// The floor report (`loadgen --floor --json -`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Floor {
    pub schema_version: u32,
    pub loadgen_version: String,
    /// CPUs the calling thread may run on (affinity mask).
    pub allowed_cpus: Vec<u32>,
    /// CPU the timer measurement started on (`None` if unknown).
    pub cpu: Option<u32>,
    /// How long each measurement ran.
    pub duration_ms: u64,
    /// One entry per requested rate.
    pub timer: Vec<TimerFloor>,
    pub loopback_echo: EchoFloor,
}

/// Timer wake-up lateness at one rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimerFloor {
    pub rate_per_s: f64,
    /// e.g. "clock_nanosleep(TIMER_ABSTIME) to absolute CLOCK_MONOTONIC deadlines, timer slack 20 µs".
    pub method: String,
    /// Wake-up − deadline; `None` when unsupported.
    pub lateness: Option<FloorPercentiles>,
    /// The thread's CPU time (user + system) per sleep and wake-up: what each wake-up costs
    /// an open-loop sender on this machine, before it does any work (on a VM, mostly timer
    /// programming and interrupt delivery by the hypervisor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_wakeup_us: Option<f64>,
    /// Why this could not be measured (then `lateness` is `None`).
    pub unsupported: Option<String>,
}

/// Round trip of a loopback TCP echo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EchoFloor {
    /// e.g. "blocking TCP_NODELAY socket to an echo thread on 127.0.0.1, 64-byte messages".
    pub method: String,
    pub payload_bytes: u32,
    /// Send → complete echo received; `None` when unsupported.
    pub round_trip: Option<FloorPercentiles>,
    /// Why this could not be measured (then `round_trip` is `None`).
    pub unsupported: Option<String>,
}

/// A distribution in microseconds with sub-µs resolution (recorded in ns, 3 significant
/// digits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FloorPercentiles {
    pub samples: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl FloorPercentiles {
    fn from_ns(h: &hdrhistogram::Histogram<u64>) -> Option<Self> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Some(Self {
            samples: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
        })
    }
}

/// Histogram for ns values: 1 ns .. 10 s, 3 significant digits.
fn ns_hist() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("static bounds")
}

/// Measure the floor on the calling thread (and one echo thread).
pub fn measure(spec: &FloorSpec) -> Floor {
    let cpu = crate::sys::proc::current_cpu();
    let timer = spec
        .rates_per_s
        .iter()
        .map(|&r| timer::measure(r, spec.duration_ms))
        .collect();
    Floor {
        schema_version: FLOOR_SCHEMA_VERSION,
        loadgen_version: env!("CARGO_PKG_VERSION").to_string(),
        allowed_cpus: crate::sys::proc::allowed_cpus(),
        cpu,
        duration_ms: spec.duration_ms,
        timer,
        loopback_echo: echo::measure(spec.duration_ms),
    }
}

/// The JSON Schema of `Floor` (the committed `loadgen/floor-schema.json` must equal it).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Floor);
    serde_json::to_string_pretty(&schema).expect("a schema always serializes") + "\n"
}

/// A few lines for humans.
pub fn summary(f: &Floor) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let p = |x: &Option<FloorPercentiles>, why: &Option<String>| match (x, why) {
        (Some(p), _) => format!(
            "p50 {:.1} µs  p99 {:.1} µs  p99.9 {:.1} µs  max {:.1} µs  ({} samples)",
            p.p50_us, p.p99_us, p.p999_us, p.max_us, p.samples
        ),
        (None, Some(why)) => format!("unsupported: {why}"),
        (None, None) => "no samples".into(),
    };
    let cpu = f.cpu.map_or("?".into(), |c| c.to_string());
    let _ = writeln!(
        o,
        "loadgen {} floor on cpu {cpu} (allowed {:?}), {} ms per measurement",
        f.loadgen_version, f.allowed_cpus, f.duration_ms
    );
    for t in &f.timer {
        let _ = writeln!(
            o,
            "  timer lateness at {:>8.0}/s: {}",
            t.rate_per_s,
            p(&t.lateness, &t.unsupported)
        );
    }
    let e = &f.loopback_echo;
    let _ = writeln!(
        o,
        "  loopback echo round trip:     {}",
        p(&e.round_trip, &e.unsupported)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_floor_specs_are_rejected() {
        let ok = FloorSpec {
            rates_per_s: vec![1000.0],
            duration_ms: 100,
        };
        assert!(ok.validate().is_ok());
        for bad in [
            FloorSpec {
                rates_per_s: vec![],
                ..ok.clone()
            },
            FloorSpec {
                rates_per_s: vec![0.0],
                ..ok.clone()
            },
            FloorSpec {
                rates_per_s: vec![f64::NAN],
                ..ok.clone()
            },
            FloorSpec {
                rates_per_s: vec![1e9],
                ..ok.clone()
            },
            FloorSpec {
                duration_ms: 0,
                ..ok.clone()
            },
            FloorSpec {
                duration_ms: MAX_FLOOR_MS + 1,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_short_floor_measures_both_parts() {
        let f = measure(&FloorSpec {
            rates_per_s: vec![2000.0, 10_000.0],
            duration_ms: 100,
        });
        assert_eq!(f.timer.len(), 2);
        for t in &f.timer {
            let l = t.lateness.as_ref().expect("clock_nanosleep works here");
            // ~200 and ~1000 wake-ups; a starved CI thread may miss some deadlines.
            assert!(l.samples >= 20, "{t:?}");
            assert!(l.p50_us <= l.p99_us && l.p99_us <= l.p999_us && l.p999_us <= l.max_us);
        }
        let e = f.loopback_echo.round_trip.as_ref().expect("loopback works");
        assert!(e.samples > 10 && e.p50_us > 0.0, "{e:?}");
    }
}
