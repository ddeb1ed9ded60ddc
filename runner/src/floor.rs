//! The harness's own floors, measured at the start of every run and stored in run.json:
//! how fast the runner can see the least possible service start (`pingmatrix-responder`
//! through the very path that times the services), and how late this machine wakes a
//! sleeping thread at the run's open-loop rates (`loadgen --floor` on the generator's CPU) —
//! so start-up figures and open-loop send lag can be read against what the machine allows.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use crate::limits::{self, Request, Role};
use crate::process::Proc;
use loadgen::LoadModel;
use loadgen::floor::Floor;

use crate::results::schema::{
    AT_FLOOR_FACTOR, AT_FLOOR_SLACK_US, CellSpec, FloorCheck, MachineFloor, ProfileLimits,
    StartupFloor,
};
use crate::results::summary;
use crate::service::{spawn, startup, warm};

/// Starts measured; a few ms each.
pub const STARTUP_SAMPLES: u32 = 10;
/// The trivial responder the start-up floor is measured with (runner's second binary).
pub const RESPONDER: &str = "pingmatrix-responder";

/// `STARTUP_SAMPLES` starts of the responder under the first profile's server confinement,
/// probed from its generator CPUs, each after a warm-up start as the services' are. Unavailable (with the reason) when the responder is not
/// next to `matrix` or does not start.
pub fn startup(exe_dir: Option<&Path>, limits: Option<&ProfileLimits>) -> StartupFloor {
    let binary = exe_dir.map(|d| d.join(RESPONDER));
    let unavailable = |reason: String| StartupFloor {
        binary: RESPONDER.into(),
        first_200_us: None,
        launch_us: None,
        unavailable: Some(reason),
        launch: crate::process::launch_method(),
        warm_up: None,
    };
    let Some(binary) = binary.filter(|b| b.is_file()) else {
        return unavailable(format!("{RESPONDER} not found next to matrix"));
    };
    let mut first = Vec::new();
    let mut launch = Vec::new();
    for _ in 0..STARTUP_SAMPLES {
        match one_start(&binary, limits) {
            Ok((f, l)) => {
                first.push(f as f64);
                launch.extend(l.map(|x| x as f64));
            }
            Err(e) => return unavailable(e),
        }
    }
    StartupFloor {
        binary: crate::binaries::display_path(&binary),
        first_200_us: summary::summarize(&first),
        launch_us: summary::summarize(&launch),
        unavailable: None,
        launch: crate::process::launch_method(),
        warm_up: Some(WARM_UP.into()),
    }
}

/// What run.json says precedes every measured start.
const WARM_UP: &str = "each measured start (responder and services) follows an unmeasured warm-up start of the same command under the same confinement, killed after its first 200; the warm-up's own figure is the start's warmup_first_200_us";

fn one_start(binary: &Path, limits: Option<&ProfileLimits>) -> Result<(u64, Option<u64>), String> {
    let (server_cpus, probe_cpus) = limits.map_or((vec![], vec![]), |l| {
        (l.server_cpus.clone(), l.loadgen_cpus.clone())
    });
    let request = Request {
        cpus: server_cpus,
        cpu_quota: None,
        memory_max_bytes: None,
    };
    let conf = limits::confine(Role::Server, &request).map_err(|e| e.to_string())?;
    // As every service start: warm, after an unmeasured one.
    let timeout = Duration::from_secs(5);
    let ip = IpAddr::from([127, 0, 0, 1]);
    warm::warm_up(binary, ip, 1, &[], "/ping", &conf, &probe_cpus, timeout)
        .map_err(|f| f.reason)?;
    let addr = spawn::free_addr(ip).map_err(|e| format!("no free port: {e}"))?;
    let mut proc: Proc = spawn::spawn(binary, addr, 1, &[], &conf, &probe_cpus)
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let ready = limits::cpus::on_cpus(&probe_cpus, || {
        startup::wait_ready(&mut proc, addr, timeout)
    })?;
    drop(proc);
    Ok((ready.first_200_us, ready.launch_us))
}

/// How long `loadgen --floor` may take.
const MACHINE_TIMEOUT: Duration = Duration::from_secs(30);

/// `loadgen --floor` at the plan's open-loop rates, pinned to the first profile's generator
/// CPUs. Unavailable (with the reason) when the plan has no open loop or loadgen fails.
pub fn machine(loadgen: &Path, cells: &[&CellSpec]) -> MachineFloor {
    let mut rates: Vec<f64> = cells
        .iter()
        .filter_map(|c| match c.load {
            LoadModel::Open { rate_per_s, .. } => Some(rate_per_s),
            LoadModel::Closed { .. } => None,
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    let unavailable = |reason: String| MachineFloor {
        report: None,
        unavailable: Some(reason),
    };
    if rates.is_empty() {
        return unavailable("no open-loop cell in this run".into());
    }
    let cpus = cells
        .first()
        .map_or(vec![], |c| c.limits.loadgen_cpus.clone());
    let mut cmd = std::process::Command::new(loadgen);
    cmd.arg("--floor")
        .arg("--floor-rates")
        .arg(
            rates
                .iter()
                .map(|r| format!("{r}"))
                .collect::<Vec<_>>()
                .join(","),
        )
        .args(["--floor-duration", "500ms", "--json", "-"]);
    // Pinned the way the generator will be.
    let out = limits::cpus::on_cpus(&cpus, || {
        crate::process::output_within(cmd, MACHINE_TIMEOUT)
    });
    match out {
        Ok((status, json)) if status.success() => match serde_json::from_str::<Floor>(&json) {
            Ok(f) => MachineFloor {
                report: Some(f),
                unavailable: None,
            },
            Err(e) => unavailable(format!("loadgen --floor printed no floor report: {e}")),
        },
        Ok((status, _)) => unavailable(format!("loadgen --floor: {status}")),
        Err(e) => unavailable(e),
    }
}

/// What loadgen measured of one open-loop repetition's send lag (µs, p99).
#[derive(Debug, Clone, Copy)]
pub struct Lag {
    /// Send lag of requests that found a free connection.
    pub send_p99_us: u64,
    /// Of it, the generator thread's wake-ups' lateness and its own part (reports older
    /// than the split lack both).
    pub wake_p99_us: Option<u64>,
    pub own_p99_us: Option<u64>,
    pub latency_p99_us: u64,
}

/// Whose an open-loop repetition's send lag is. Where loadgen split it, by the generator's
/// own part: at or below loadgen's send-lag limit, the lag is the machine's (the thread was
/// woken or run late) — a stall of the generator's CPU delays every send due during it (a
/// 4 ms stall at 5,000/s, 20 sends) but is a single late wake-up to the start-of-run probe,
/// and it comes from whatever ran on that CPU then. Reports without the split are judged
/// against the start-of-run floor at the nearest measured rate.
pub fn check(floor: &Floor, rate_per_s: f64, lag: Lag) -> Option<FloorCheck> {
    let t = floor
        .timer
        .iter()
        .filter(|t| t.lateness.is_some())
        .min_by(|a, b| {
            (a.rate_per_s - rate_per_s)
                .abs()
                .total_cmp(&(b.rate_per_s - rate_per_s).abs())
        })?;
    let p99 = t.lateness.as_ref()?.p99_us;
    let limit = loadgen::send_lag_limit_us(lag.latency_p99_us);
    let at_floor = match lag.own_p99_us {
        Some(own) => own <= limit,
        None => lag.send_p99_us as f64 <= AT_FLOOR_FACTOR * p99 + AT_FLOOR_SLACK_US,
    };
    let own_lag_limit_us = lag.own_p99_us.map(|_| limit);
    Some(FloorCheck {
        send_lag_p99_us: lag.send_p99_us,
        floor_p99_us: p99,
        floor_rate_per_s: t.rate_per_s,
        wake_lag_p99_us: lag.wake_p99_us,
        own_lag_p99_us: lag.own_p99_us,
        own_lag_limit_us,
        at_floor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::floor::{EchoFloor, FloorPercentiles, TimerFloor};

    fn floor(rates: &[(f64, f64)]) -> Floor {
        Floor {
            schema_version: 1,
            loadgen_version: "test".into(),
            allowed_cpus: vec![1],
            cpu: Some(1),
            duration_ms: 500,
            timer: rates
                .iter()
                .map(|&(rate_per_s, p99_us)| TimerFloor {
                    rate_per_s,
                    method: "test".into(),
                    lateness: Some(FloorPercentiles {
                        samples: 100,
                        p50_us: p99_us / 4.0,
                        p99_us,
                        p999_us: p99_us * 2.0,
                        max_us: p99_us * 3.0,
                    }),
                    cpu_per_wakeup_us: None,
                    unsupported: None,
                })
                .collect(),
            loopback_echo: EchoFloor {
                method: "test".into(),
                payload_bytes: 64,
                round_trip: None,
                unsupported: Some("test".into()),
            },
        }
    }

    /// A repetition's lag as loadgen reports it; `split` = (wake p99, own p99).
    fn lag(send: u64, split: Option<(u64, u64)>) -> Lag {
        Lag {
            send_p99_us: send,
            wake_p99_us: split.map(|s| s.0),
            own_p99_us: split.map(|s| s.1),
            latency_p99_us: 1_000,
        }
    }

    #[test]
    fn send_lag_within_the_floor_is_the_machines() {
        let f = floor(&[(5000.0, 2000.0), (20000.0, 300.0)]);
        // 2.9 ms of send lag at 5,000/s on a machine that wakes 2 ms late: the machine.
        let c = check(&f, 5000.0, lag(2900, None)).unwrap();
        assert!(c.at_floor, "{c:?}");
        assert_eq!(c.floor_rate_per_s, 5000.0);
        // 3 ms at 20,000/s where the machine wakes 0.3 ms late: the generator fell behind.
        let c = check(&f, 20000.0, lag(3000, None)).unwrap();
        assert!(!c.at_floor, "{c:?}");
        // The nearest measured rate is used.
        let c = check(&f, 6000.0, lag(10, None)).unwrap();
        assert_eq!(c.floor_rate_per_s, 5000.0);
        assert!(check(&floor(&[]), 5000.0, lag(10, None)).is_none());
    }

    #[test]
    fn the_generators_own_part_of_the_lag_decides_where_reported() {
        let f = floor(&[(5000.0, 50.0)]);
        // Woken 900 µs late at p99 in the run (a stall the probe missed), its own part small:
        // the machine.
        let c = check(&f, 5000.0, lag(950, Some((900, 60)))).unwrap();
        assert!(c.at_floor, "{c:?}");
        assert_eq!((c.floor_p99_us, c.wake_lag_p99_us), (50.0, Some(900)));
        assert_eq!(
            (c.own_lag_p99_us, c.own_lag_limit_us),
            (Some(60), Some(200))
        );
        // Woken on time but sending late: the generator's own lag, whatever the probe said.
        let c = check(
            &floor(&[(5000.0, 2000.0)]),
            5000.0,
            lag(950, Some((40, 900))),
        )
        .unwrap();
        assert!(!c.at_floor, "{c:?}");
        // The limit follows the latency, as loadgen's does (10 % of a 5 ms p99).
        let mut l = lag(950, Some((100, 450)));
        l.latency_p99_us = 5_000;
        let c = check(&f, 5000.0, l).unwrap();
        assert!(c.at_floor && c.own_lag_limit_us == Some(500), "{c:?}");
    }
}
