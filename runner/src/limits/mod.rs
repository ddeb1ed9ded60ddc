//! Applying a resource profile to one process: cgroups (v1 or v2) for cpuset, CPU quota and
//! memory max, plus the affinity mask, installed between fork and exec so the process never
//! runs a single instruction unconfined.
//!
//! Child groups are created under the runner's own cgroup and removed on drop. When a
//! requested limit cannot be applied the caller gets `Unsupported` with the reason — never a
//! silent unlimited run.
//!
//! `cgroup` probes which hierarchy the machine offers; `cgroup_v1` / `cgroup_v2` hold what differs between the versions (file names, layout);
//! what they share — quota arithmetic, reading back the applied values, the applied-limits
//! record, parsing `/proc/self/cgroup` and counter files — lives here.

pub mod cgroup;
pub mod cgroup_v1;
pub mod cgroup_v2;
pub mod cpus;

use std::collections::BTreeMap;
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sched::{CpuSet, sched_setaffinity};
use nix::unistd::Pid;

use crate::results::schema::{AppliedLimits, CgroupCounters};
use cgroup::{CGROUP_ROOT, CgroupVersion};

impl CgroupCounters {
    /// The counters accrued since `before` (both read from the same group); the memory peak
    /// is the group's own, since its creation, which is the peak of this start.
    pub fn since(&self, before: &CgroupCounters) -> CgroupCounters {
        let d = |b: Option<u64>, a: Option<u64>| Some(a?.saturating_sub(b.unwrap_or(0)));
        CgroupCounters {
            nr_periods: d(before.nr_periods, self.nr_periods),
            nr_throttled: d(before.nr_throttled, self.nr_throttled),
            throttled_us: d(before.throttled_us, self.throttled_us),
            memory_peak_bytes: self.memory_peak_bytes,
            oom_kills: d(before.oom_kills, self.oom_kills),
        }
    }
}

/// What one process should be confined to.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub cpus: Vec<u32>,
    pub cpu_quota: Option<f64>,
    pub memory_max_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Unsupported(pub String);

/// Whose process a confinement is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Server,
    Loadgen,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Loadgen => "loadgen",
        }
    }
}

/// A unique child-group name for this runner process.
pub fn group_name(role: Role) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    format!(
        "pingmatrix-{}-{}-{}",
        std::process::id(),
        role.as_str(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Limits in force for one process: created cgroup dirs (removed on drop) and what to do
/// between fork and exec.
#[derive(Debug, Default)]
pub struct Confinement {
    /// `cgroup.procs` files the child writes "0" into (moves itself) before exec.
    procs_files: Vec<CString>,
    affinity: Option<Vec<u32>>,
    /// Directories to remove once the process is gone (deepest last created first).
    dirs: Vec<PathBuf>,
    pub record: Option<AppliedLimits>,
    /// Where counters are read (cpu.stat, memory files).
    pub cpu_dir: Option<PathBuf>,
    pub memory_dir: Option<PathBuf>,
    pub version: Option<CgroupVersion>,
}

/// A child's steps into its confinement between fork (or clone) and exec — cgroup attach,
/// affinity, parent-death signal — prepared beforehand so that applying them allocates
/// nothing and only makes async-signal-safe calls.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    /// `cgroup.procs` files the child writes "0" into (moves itself).
    procs_files: Vec<CString>,
    affinity: Option<CpuSet>,
}

impl ChildSetup {
    /// Pins the child to `cpus` when the confinement itself pins it nowhere (a launcher that
    /// pinned its own thread elsewhere passes the mask it had before).
    pub fn or_affinity(mut self, cpus: CpuSet) -> ChildSetup {
        self.affinity.get_or_insert(cpus);
        self
    }

    /// Applies the steps to the calling process (errors carry the OS error code only, so
    /// nothing allocates; `errno` is left set too).
    ///
    /// # Safety
    /// Meant for a child between fork/clone and exec: it must run on the child's side only.
    pub unsafe fn apply(&self) -> std::io::Result<()> {
        for p in &self.procs_files {
            // SAFETY: NUL-terminated path prepared before; plain syscalls.
            unsafe {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let r = libc::write(fd, b"0".as_ptr().cast(), 1);
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                if r != 1 {
                    return Err(e);
                }
            }
        }
        if let Some(set) = &self.affinity {
            sched_setaffinity(Pid::from_raw(0), set).map_err(std::io::Error::from)?;
        }
        // No orphans even if the runner itself is SIGKILLed.
        // SAFETY: prctl with plain integers.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
        Ok(())
    }
}

/// Builds the confinement for `req`: cgroups when available (required for quota / memory),
/// affinity always.
pub fn confine(role: Role, req: &Request) -> Result<Confinement, Unsupported> {
    let needs_cgroup = req.cpu_quota.is_some() || req.memory_max_bytes.is_some();
    let attempt = match cgroup::version() {
        CgroupVersion::V1 => cgroup_v1::create(role, req),
        CgroupVersion::V2 => cgroup_v2::create(role, req),
        CgroupVersion::None => Err(Unsupported(format!(
            "no cgroup filesystem at {CGROUP_ROOT}"
        ))),
    };
    let mut c = match attempt {
        Ok(c) => c,
        Err(e) if needs_cgroup => {
            return Err(Unsupported(format!(
                "CPU quota / memory limit requested but cgroups are unusable: {e}"
            )));
        }
        Err(e) => {
            let mut c = Confinement::default();
            c.record = Some(AppliedLimits {
                mechanism: "affinity-only".into(),
                server_cgroups: vec![],
                loadgen_cgroups: vec![],
                readback: BTreeMap::new(),
                notes: vec![format!(
                    "cpuset cgroup unavailable ({e}); CPUs enforced by sched_setaffinity only, which a runtime that pins its own threads can override"
                )],
            });
            c
        }
    };
    if !req.cpus.is_empty() {
        c.affinity = Some(req.cpus.clone());
    }
    Ok(c)
}

impl Confinement {
    pub(crate) fn add_dir(&mut self, dir: PathBuf) -> std::io::Result<()> {
        let procs = dir.join("cgroup.procs");
        self.dirs.push(dir);
        let c = CString::new(procs.into_os_string().into_encoded_bytes())
            .map_err(std::io::Error::other)?;
        self.procs_files.push(c);
        Ok(())
    }

    /// The cgroup directories the process is started in (empty: affinity only).
    pub fn cgroup_dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// What the child does between fork (or clone) and exec to enter this confinement.
    pub fn child_setup(&self) -> ChildSetup {
        ChildSetup {
            procs_files: self.procs_files.clone(),
            affinity: self.affinity.as_deref().map(cpus::cpu_set),
        }
    }

    /// Installs process-group, cgroup attach, affinity and parent-death signal into `cmd`.
    pub fn install(&self, cmd: &mut Command) {
        let setup = self.child_setup();
        cmd.process_group(0);
        // SAFETY: `ChildSetup::apply` only makes async-signal-safe calls on data prepared
        // before fork; nothing allocates.
        unsafe {
            cmd.pre_exec(move || setup.apply());
        }
    }

    /// Throttling / memory counters now (absolute; the caller takes deltas).
    pub fn counters(&self) -> Option<CgroupCounters> {
        match self.version? {
            CgroupVersion::V1 => Some(cgroup_v1::counters(self)),
            CgroupVersion::V2 => Some(cgroup_v2::counters(self)),
            CgroupVersion::None => None,
        }
    }

    /// A copy that reads this confinement's counters and owns nothing: dropping it removes
    /// no cgroup, so a reader may outlive the release of the original.
    pub fn reader(&self) -> Confinement {
        Confinement {
            procs_files: vec![],
            affinity: None,
            dirs: vec![],
            record: None,
            cpu_dir: self.cpu_dir.clone(),
            memory_dir: self.memory_dir.clone(),
            version: self.version,
        }
    }

    /// Removes the cgroup dirs (the process must be gone). Retries briefly: the kernel
    /// releases an exited task's membership asynchronously.
    pub fn release(&mut self) {
        for dir in self.dirs.drain(..).rev() {
            for _ in 0..50 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }
}

impl Drop for Confinement {
    fn drop(&mut self) {
        self.release();
    }
}

/// Parses `/proc/self/cgroup` into (controllers, path) pairs.
pub fn self_cgroups() -> Vec<(Vec<String>, String)> {
    parse_cgroups(&std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default())
}

/// `id:controllers:path` lines; the v2 line has no controllers ("0::/path").
fn parse_cgroups(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.splitn(3, ':');
            let _id = it.next()?;
            let ctrls = it.next()?;
            let path = it.next()?;
            Some((
                ctrls
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect(),
                path.to_string(),
            ))
        })
        .collect()
}

pub(crate) fn write(path: &Path, value: &str) -> Result<(), Unsupported> {
    std::fs::write(path, value)
        .map_err(|e| Unsupported(format!("cannot write {value:?} to {}: {e}", path.display())))
}

pub(crate) fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// CFS period of a CPU quota, in both versions: 100 ms, the kernel's default period.
pub(crate) const PERIOD_US: u64 = 100_000;

/// Quota per period for `cpus` CPUs' worth of time, at least the kernel's 1 ms minimum (a
/// smaller value would be refused rather than rounded up).
pub(crate) fn quota_us(cpus: f64) -> u64 {
    ((cpus * PERIOD_US as f64).round() as u64).max(1000)
}

/// Records what the kernel reports for `file` after writing it — the value actually in
/// force, which may differ from the one written (empty when unreadable).
pub(crate) fn read_back(readback: &mut BTreeMap<String, String>, dir: &Path, file: &str) {
    readback.insert(file.into(), read_trim(&dir.join(file)).unwrap_or_default());
}

/// The note when swap could not be limited along with memory: the limit still holds for
/// RAM, but the run must say that swap may have extended it.
pub(crate) fn swap_note(file: &str, e: &std::io::Error) -> String {
    format!("{file} not set ({e}); swap may extend the limit")
}

/// The record of a created confinement: its groups belong to the server or to the load
/// generator, by role.
pub(crate) fn applied_limits(
    mechanism: &str,
    role: Role,
    dirs: Vec<String>,
    readback: BTreeMap<String, String>,
    notes: Vec<String>,
) -> AppliedLimits {
    AppliedLimits {
        mechanism: mechanism.into(),
        server_cgroups: if role == Role::Server {
            dirs.clone()
        } else {
            vec![]
        },
        loadgen_cgroups: if role == Role::Server { vec![] } else { dirs },
        readback,
        notes,
    }
}

/// Where a cgroup version keeps the counters `read_counters` reads; the reading is the same.
pub(crate) struct CounterFiles {
    /// `cpu.stat` key of the total throttled time.
    pub throttled_key: &'static str,
    /// Units of that time per µs (v1 counts ns, v2 µs).
    pub throttled_per_us: u64,
    /// Peak memory use in bytes, one number.
    pub peak_file: &'static str,
    /// `key value` file holding the `oom_kill` count.
    pub events_file: &'static str,
}

/// Throttling / memory counters of a confinement's groups; None where a group or file is
/// missing.
pub(crate) fn read_counters(c: &Confinement, files: &CounterFiles) -> CgroupCounters {
    let cpu = c.cpu_dir.as_ref().map(|d| d.join("cpu.stat"));
    let mem = c.memory_dir.as_ref();
    CgroupCounters {
        nr_periods: cpu.as_ref().and_then(|p| keyed(p, "nr_periods")),
        nr_throttled: cpu.as_ref().and_then(|p| keyed(p, "nr_throttled")),
        throttled_us: cpu
            .as_ref()
            .and_then(|p| keyed(p, files.throttled_key))
            .map(|t| t / files.throttled_per_us),
        memory_peak_bytes: mem.and_then(|d| read_trim(&d.join(files.peak_file))?.parse().ok()),
        oom_kills: mem.and_then(|d| keyed(&d.join(files.events_file), "oom_kill")),
    }
}

/// `key value` lines (cpu.stat, memory.events, memory.oom_control).
pub(crate) fn keyed(path: &Path, key: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fresh scratch directory for fake cgroup files.
    pub(crate) fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pingmatrix-limits-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Writes a version's counter files (`files`: name, content) into a scratch group and
    /// checks that `counters` reads the same figures from them: 40 periods, 5 throttled,
    /// 7 ms throttled, 1 MiB peak, 2 OOM kills; and nothing from a group without dirs.
    pub(crate) fn check_counters(
        version: &str,
        files: &[(&str, &str)],
        counters: fn(&Confinement) -> CgroupCounters,
    ) {
        let dir = scratch(&format!("counters-{version}"));
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let mut c = Confinement::default();
        c.cpu_dir = Some(dir.clone());
        c.memory_dir = Some(dir.clone());
        let got = counters(&c);
        assert_eq!(got.nr_periods, Some(40), "{version}");
        assert_eq!(got.nr_throttled, Some(5), "{version}");
        assert_eq!(got.throttled_us, Some(7000), "{version}");
        assert_eq!(got.memory_peak_bytes, Some(1_048_576), "{version}");
        assert_eq!(got.oom_kills, Some(2), "{version}");
        let none = counters(&Confinement::default());
        assert_eq!(none.nr_periods, None, "{version}");
        assert_eq!(none.memory_peak_bytes, None, "{version}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn quota_is_cpus_times_period_with_a_1ms_floor() {
        assert_eq!(quota_us(1.0), 100_000);
        assert_eq!(quota_us(1.5), 150_000);
        assert_eq!(quota_us(0.25), 25_000);
        assert_eq!(quota_us(0.001), 1000);
        assert_eq!(quota_us(0.0), 1000);
    }

    #[test]
    fn record_assigns_groups_by_role() {
        let dirs = vec!["/a".to_string(), "/b".to_string()];
        let s = applied_limits(
            "cgroup-v1",
            Role::Server,
            dirs.clone(),
            BTreeMap::new(),
            vec![],
        );
        assert_eq!(s.mechanism, "cgroup-v1");
        assert_eq!(s.server_cgroups, dirs);
        assert!(s.loadgen_cgroups.is_empty());
        let l = applied_limits(
            "cgroup-v2",
            Role::Loadgen,
            dirs.clone(),
            BTreeMap::new(),
            vec!["n".into()],
        );
        assert_eq!(l.mechanism, "cgroup-v2");
        assert!(l.server_cgroups.is_empty());
        assert_eq!(l.loadgen_cgroups, dirs);
        assert_eq!(l.notes, vec!["n".to_string()]);
    }

    #[test]
    fn swap_note_names_the_file_and_the_error() {
        let e = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            swap_note("memory.swap.max", &e),
            format!("memory.swap.max not set ({e}); swap may extend the limit")
        );
    }

    #[test]
    fn read_back_records_the_trimmed_value_or_empty() {
        let dir = scratch("readback");
        std::fs::write(dir.join("cpu.max"), "50000 100000\n").unwrap();
        let mut m = BTreeMap::new();
        read_back(&mut m, &dir, "cpu.max");
        read_back(&mut m, &dir, "missing");
        assert_eq!(m["cpu.max"], "50000 100000");
        assert_eq!(m["missing"], "");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn keyed_finds_exact_keys_only() {
        let dir = scratch("keyed");
        let f = dir.join("cpu.stat");
        std::fs::write(&f, "nr_periods 10\nnr_throttled 3\nthrottled_usec 1234\n").unwrap();
        assert_eq!(keyed(&f, "nr_throttled"), Some(3));
        assert_eq!(keyed(&f, "throttled_usec"), Some(1234));
        assert_eq!(keyed(&f, "nr"), None);
        assert_eq!(keyed(&dir.join("missing"), "nr_periods"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn parses_v1_and_v2_cgroup_lines() {
        let v = parse_cgroups("4:cpu,cpuacct:/user.slice\n7:cpuset:/\n0::/init.scope\n");
        assert_eq!(
            v,
            vec![
                (
                    vec!["cpu".to_string(), "cpuacct".to_string()],
                    "/user.slice".to_string()
                ),
                (vec!["cpuset".to_string()], "/".to_string()),
                (vec![], "/init.scope".to_string()),
            ]
        );
        assert!(parse_cgroups("garbage\n").is_empty());
    }
}
