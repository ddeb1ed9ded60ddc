//! The harness's own floors, measured at the start of every run and stored in run.json:
//! how fast the runner can see the least possible service start (`pingmatrix-responder`
//! through the very path that times the services), and how late this machine wakes a
//! sleeping thread at the run's open-loop rates (`loadgen --floor` on the generator's CPU) —
//! so start-up figures and open-loop send lag can be read against what the machine allows.

use std::net::SocketAddr;
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
use crate::results::stats;
use crate::service::{spawn, startup, warm};

/// Starts measured; a few ms each.
pub const STARTUP_SAMPLES: u32 = 10;
const RESPONDER: &str = "pingmatrix-responder";

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
        first_200_us: stats::summarize(&first),
        launch_us: stats::summarize(&launch),
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
    warm::warm_up(binary, 1, &[], &conf, &probe_cpus, timeout).map_err(|f| f.reason)?;
    let port = spawn::free_port().map_err(|e| format!("no free port: {e}"))?;
    let mut proc: Proc = spawn::spawn(binary, port, 1, &[], &conf, &probe_cpus)
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
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

/// An open-loop repetition's send-lag p99 against the floor at the nearest measured rate.
pub fn check(floor: &Floor, rate_per_s: f64, send_lag_p99_us: u64) -> Option<FloorCheck> {
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
    Some(FloorCheck {
        send_lag_p99_us,
        floor_p99_us: p99,
        floor_rate_per_s: t.rate_per_s,
        at_floor: send_lag_p99_us as f64 <= AT_FLOOR_FACTOR * p99 + AT_FLOOR_SLACK_US,
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

    #[test]
    fn send_lag_within_the_floor_is_the_machines() {
        let f = floor(&[(5000.0, 2000.0), (20000.0, 300.0)]);
        // 2.9 ms of send lag at 5,000/s on a machine that wakes 2 ms late: the machine.
        let c = check(&f, 5000.0, 2900).unwrap();
        assert!(c.at_floor, "{c:?}");
        assert_eq!(c.floor_rate_per_s, 5000.0);
        // 3 ms at 20,000/s where the machine wakes 0.3 ms late: the generator fell behind.
        let c = check(&f, 20000.0, 3000).unwrap();
        assert!(!c.at_floor, "{c:?}");
        // The nearest measured rate is used.
        assert_eq!(check(&f, 6000.0, 10).unwrap().floor_rate_per_s, 5000.0);
        assert!(check(&floor(&[]), 5000.0, 10).is_none());
    }
}
