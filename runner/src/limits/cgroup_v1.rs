//! cgroup v1 (also "hybrid" layouts): one hierarchy per controller under /sys/fs/cgroup/<c>.
//! Children go under the runner's own group in each hierarchy (from /proc/self/cgroup).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cgroup::{CGROUP_ROOT, CgroupVersion};
use super::cpus::format_cpus;
use super::{
    Confinement, CounterFiles, PERIOD_US, Request, Role, Unsupported, applied_limits, group_name,
    quota_us, read_back, read_counters, read_trim, self_cgroups, swap_note, write,
};
use crate::results::schema::CgroupCounters;

/// The runner's own directory in the hierarchy holding `controller`.
fn own_dir(controller: &str) -> Result<PathBuf, Unsupported> {
    let (ctrls, path) = self_cgroups()
        .into_iter()
        .find(|(c, _)| c.iter().any(|c| c == controller))
        .ok_or_else(|| Unsupported(format!("controller {controller} not in /proc/self/cgroup")))?;
    let candidates = [controller.to_string(), ctrls.join(",")];
    for mount in candidates {
        let root = Path::new(CGROUP_ROOT).join(&mount);
        if root.exists() {
            return Ok(root.join(path.trim_start_matches('/')));
        }
    }
    Err(Unsupported(format!(
        "{controller} hierarchy not mounted under {CGROUP_ROOT}"
    )))
}

fn mkdir(c: &mut Confinement, controller: &str, name: &str) -> Result<PathBuf, Unsupported> {
    let dir = own_dir(controller)?.join(name);
    std::fs::create_dir(&dir)
        .map_err(|e| Unsupported(format!("cannot create {}: {e}", dir.display())))?;
    c.add_dir(dir.clone())
        .map_err(|e| Unsupported(format!("bad cgroup path {}: {e}", dir.display())))?;
    Ok(dir)
}

pub fn create(role: Role, req: &Request) -> Result<Confinement, Unsupported> {
    let name = group_name(role);
    let mut c = Confinement::default();
    c.version = Some(CgroupVersion::V1);
    let mut readback = BTreeMap::new();
    let mut notes = Vec::new();
    if !req.cpus.is_empty() {
        let dir = mkdir(&mut c, "cpuset", &name)?;
        // A v1 cpuset child starts empty: mems must be copied from the parent first.
        let mems = read_trim(&dir.parent().unwrap_or(&dir).join("cpuset.mems"))
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "0".into());
        write(&dir.join("cpuset.mems"), &mems)?;
        write(&dir.join("cpuset.cpus"), &format_cpus(&req.cpus))?;
        read_back(&mut readback, &dir, "cpuset.cpus");
    }
    if let Some(q) = req.cpu_quota {
        let dir = mkdir(&mut c, "cpu", &name)?;
        write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
        write(&dir.join("cpu.cfs_quota_us"), &quota_us(q).to_string())?;
        read_back(&mut readback, &dir, "cpu.cfs_quota_us");
        read_back(&mut readback, &dir, "cpu.cfs_period_us");
        c.cpu_dir = Some(dir);
    }
    if let Some(m) = req.memory_max_bytes {
        let dir = mkdir(&mut c, "memory", &name)?;
        write(&dir.join("memory.limit_in_bytes"), &m.to_string())?;
        // Without this, swap would let the process exceed the limit unnoticed.
        match std::fs::write(dir.join("memory.memsw.limit_in_bytes"), m.to_string()) {
            Ok(()) => read_back(&mut readback, &dir, "memory.memsw.limit_in_bytes"),
            Err(e) => notes.push(swap_note("memory.memsw.limit_in_bytes", &e)),
        }
        read_back(&mut readback, &dir, "memory.limit_in_bytes");
        c.memory_dir = Some(dir);
    }
    let dirs: Vec<String> = c.dirs.iter().map(|d| d.display().to_string()).collect();
    c.record = Some(applied_limits("cgroup-v1", role, dirs, readback, notes));
    Ok(c)
}

const COUNTERS: CounterFiles = CounterFiles {
    throttled_key: "throttled_time",
    throttled_per_us: 1000,
    peak_file: "memory.max_usage_in_bytes",
    events_file: "memory.oom_control",
};

pub fn counters(c: &Confinement) -> CgroupCounters {
    read_counters(c, &COUNTERS)
}

#[cfg(test)]
mod tests {
    use super::super::tests::check_counters;
    use super::*;

    #[test]
    fn counters_read_the_v1_files() {
        check_counters(
            "v1",
            &[
                // throttled_time is in nanoseconds in v1.
                (
                    "cpu.stat",
                    "nr_periods 40\nnr_throttled 5\nthrottled_time 7000000\n",
                ),
                ("memory.max_usage_in_bytes", "1048576\n"),
                (
                    "memory.oom_control",
                    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
                ),
            ],
            counters,
        );
    }
}
