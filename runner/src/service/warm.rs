//! The warm-up start: an unmeasured start of the same command under the same confinement,
//! probed the same way and killed, just before every measured start (services and the
//! responder floor).
//!
//! Why: on this 2-vCPU VM a start right after another start of the same binary is
//! 0.3–0.5 ms faster than one after 50 ms of load or 200–300 ms of anything else — even
//! with a CPU kept busy meanwhile — and the extra time is the service's own exec and
//! page-fault path running on cold CPU caches (profiles: the fault-around over the binary's
//! page cache, `next_uptodate_folio`). Without a warm-up, a start-up figure depends on what
//! ran before it: the previous cell's load, the order of cells. With it every measured start
//! is a warm start, the regime an independent back-to-back probe measures after its first
//! start. The warm-up's own first 200 is kept (`warmup_first_200_us`), so the colder start is
//! still on record.
//!
//! Side effect, not counted either way: the warm-up's cgroup attach opens the kernel's
//! cgroup-migration window, so the measured child's own attach skips an RCU grace period
//! (launch ~0.2 ms instead of ~10 ms) — all before its exec clock starts.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use crate::limits::Confinement;
use crate::results::schema::{Stage, StageError};
use crate::service::{spawn, startup};

/// Starts `binary` as [`spawn::spawn`] does, waits for its first 200 on `ready_path` from
/// `probe_cpus` (within `timeout`) and kills its process group. Returns its exec → first 200
/// in µs.
#[allow(clippy::too_many_arguments)]
pub fn warm_up<'a>(
    binary: &Path,
    ip: IpAddr,
    workers: u32,
    argv: impl Into<spawn::Argv<'a>>,
    ready_path: &str,
    confinement: &Confinement,
    probe_cpus: &[u32],
    timeout: Duration,
) -> Result<u64, StageError> {
    // Spawn when it never started (no port, exec failed), start-up when it did not answer.
    let at_spawn =
        |reason: String| StageError::at(Stage::Spawn, format!("warm-up start: {reason}"));
    let addr = spawn::free_addr(ip).map_err(|e| at_spawn(format!("no free port: {e}")))?;
    let argv = argv.into();
    let mut proc = spawn::spawn(binary, addr, workers, argv, confinement, probe_cpus)
        .map_err(|e| at_spawn(format!("cannot start {}: {e}", binary.display())))?;
    let ready = crate::limits::cpus::on_cpus(probe_cpus, || {
        startup::wait_ready_at(&mut proc, addr, ready_path, timeout, argv.tls())
    });
    // SIGKILL to the group and reaped: the measured start follows at once, and nothing of
    // the warm-up outlives this call.
    proc.kill();
    match ready {
        Ok(r) => Ok(r.first_200_us),
        Err(e) => Err(
            StageError::at(Stage::Startup, format!("warm-up start: {e}"))
                .with_tail(proc.stderr_tail()),
        ),
    }
}
