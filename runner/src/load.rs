//! Running the load generator as a confined child process (`loadgen --spec <file> --json -`)
//! so it is pinned and accounted separately from the server.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use loadgen::{LoadSpec, Report};

use crate::interrupt;
use crate::limits::Confinement;
use crate::process::Proc;

/// What one generator run returned.
pub struct LoadRun {
    pub report: Report,
    pub exit_code: Option<i32>,
}

pub fn run(
    loadgen: &Path,
    spec: &LoadSpec,
    spec_file: &Path,
    confinement: &Confinement,
) -> Result<LoadRun, String> {
    run_observed(loadgen, spec, spec_file, confinement, &mut |_| {})
}

/// [`run`], telling `started` the generator's pid as soon as it runs (to count it).
pub fn run_observed(
    loadgen: &Path,
    spec: &LoadSpec,
    spec_file: &Path,
    confinement: &Confinement,
    started: &mut dyn FnMut(u32),
) -> Result<LoadRun, String> {
    run_under(&[], loadgen, spec, spec_file, confinement, started)
}

/// [`run_observed`] with the generator started by `prefix` (`perf stat … --`), which must
/// pass its stdout and exit status through; empty: the generator itself.
pub fn run_under(
    prefix: &[std::ffi::OsString],
    loadgen: &Path,
    spec: &LoadSpec,
    spec_file: &Path,
    confinement: &Confinement,
    started: &mut dyn FnMut(u32),
) -> Result<LoadRun, String> {
    let json = serde_json::to_vec_pretty(spec).map_err(|e| e.to_string())?;
    std::fs::write(spec_file, json)
        .map_err(|e| format!("cannot write {}: {e}", spec_file.display()))?;
    let mut cmd = match prefix.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(loadgen);
            c
        }
        None => Command::new(loadgen),
    };
    cmd.arg("--spec").arg(spec_file).arg("--json").arg("-");
    let mut proc = Proc::spawn(cmd, confinement)
        .map_err(|e| format!("cannot start {}: {e}", loadgen.display()))?;
    started(proc.pid);
    let budget = spec.wall_budget();
    let deadline = Instant::now() + budget;
    let status = loop {
        if let Some(st) = proc.try_wait() {
            break st;
        }
        if interrupt::requested() {
            proc.kill();
            return Err("interrupted".into());
        }
        if Instant::now() >= deadline {
            proc.kill();
            return Err(format!(
                "loadgen still running after {} s; killed",
                budget.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = std::fs::remove_file(spec_file);
    let out = proc.collect_stdout();
    let tail = proc.stderr_tail().unwrap_or_default();
    match serde_json::from_str::<Report>(&out) {
        Ok(report) if status.code() == Some(0) || status.code() == Some(1) => Ok(LoadRun {
            report,
            exit_code: status.code(),
        }),
        Ok(_) => Err(format!("loadgen exited with {status}; stderr: {tail}")),
        Err(e) => Err(format!(
            "loadgen exited with {status} without a readable report ({e}); stderr: {tail}"
        )),
    }
}
