//! The harness's own floors, measured at the start of every run and stored in run.json:
//! how fast the runner can see the least possible service start (`pingmatrix-responder`
//! through the very path that times the services), so every start-up figure can be read
//! against it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::limits::{self, Request, Role};
use crate::process::Proc;
use crate::results::schema::{ProfileLimits, StartupFloor};
use crate::results::stats;
use crate::service::{spawn, startup};

/// Starts measured; a few ms each.
pub const STARTUP_SAMPLES: u32 = 10;
const RESPONDER: &str = "pingmatrix-responder";

/// `STARTUP_SAMPLES` starts of the responder under the first profile's server confinement,
/// probed from its generator CPUs. Unavailable (with the reason) when the responder is not
/// next to `matrix` or does not start.
pub fn startup(exe_dir: Option<&Path>, limits: Option<&ProfileLimits>) -> StartupFloor {
    let binary = exe_dir.map(|d| d.join(RESPONDER));
    let unavailable = |reason: String| StartupFloor {
        binary: RESPONDER.into(),
        first_200_us: None,
        launch_us: None,
        unavailable: Some(reason),
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
    }
}

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
    let port = spawn::free_port().map_err(|e| format!("no free port: {e}"))?;
    let mut proc: Proc = spawn::spawn(binary, port, 1, &[], &conf)
        .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let ready = limits::cpus::on_cpus(&probe_cpus, || {
        startup::wait_ready(&mut proc, addr, Duration::from_secs(5))
    })?;
    drop(proc);
    Ok((ready.first_200_us, ready.launch_us))
}
