//! cgroup v2 (unified): one tree; controllers must be enabled in the parent's
//! `cgroup.subtree_control`, which the kernel refuses while the parent itself holds
//! processes ("no internal processes") — then the profile is reported unsupported with
//! that reason instead of being silently skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::cgroup::{CGROUP_ROOT, CgroupVersion};
use super::cpus::format_cpus;
use super::{
    Confinement, CounterFiles, PERIOD_US, Request, Role, Unsupported, applied_limits, group_name,
    quota_us, read_back, read_counters, read_trim, self_cgroups, swap_note, write,
};
use crate::results::schema::CgroupCounters;

fn own_dir() -> Result<PathBuf, Unsupported> {
    let (_, path) = self_cgroups()
        .into_iter()
        .find(|(c, _)| c.is_empty())
        .ok_or_else(|| Unsupported("no unified (0::) entry in /proc/self/cgroup".into()))?;
    Ok(Path::new(CGROUP_ROOT).join(path.trim_start_matches('/')))
}

/// `cpu.max` holds "<quota> <period>" in one file (v1 has two).
fn cpu_max(cpus: f64) -> String {
    format!("{} {PERIOD_US}", quota_us(cpus))
}

pub fn create(role: Role, req: &Request) -> Result<Confinement, Unsupported> {
    let parent = own_dir()?;
    let mut wanted = Vec::new();
    if !req.cpus.is_empty() {
        wanted.push("cpuset");
    }
    if req.cpu_quota.is_some() {
        wanted.push("cpu");
    }
    if req.memory_max_bytes.is_some() {
        wanted.push("memory");
    }
    let enabled = read_trim(&parent.join("cgroup.subtree_control")).unwrap_or_default();
    let available = read_trim(&parent.join("cgroup.controllers")).unwrap_or_default();
    for w in &wanted {
        if enabled.split_whitespace().any(|e| e == *w) {
            continue;
        }
        if !available.split_whitespace().any(|a| a == *w) {
            return Err(Unsupported(format!(
                "controller {w} not delegated to {}",
                parent.display()
            )));
        }
        write(&parent.join("cgroup.subtree_control"), &format!("+{w}")).map_err(|e| {
            Unsupported(format!(
                "{e} (cgroup v2 forbids enabling controllers in a group that holds processes; run matrix in its own leaf, e.g. `systemd-run --scope -p Delegate=yes matrix run`)"
            ))
        })?;
    }
    let dir = parent.join(group_name(role));
    std::fs::create_dir(&dir)
        .map_err(|e| Unsupported(format!("cannot create {}: {e}", dir.display())))?;
    let mut c = Confinement::default();
    c.version = Some(CgroupVersion::V2);
    c.add_dir(dir.clone())
        .map_err(|e| Unsupported(format!("bad cgroup path: {e}")))?;
    let mut readback = BTreeMap::new();
    let mut notes = Vec::new();
    if !req.cpus.is_empty() {
        write(&dir.join("cpuset.cpus"), &format_cpus(&req.cpus))?;
        read_back(&mut readback, &dir, "cpuset.cpus");
    }
    if let Some(q) = req.cpu_quota {
        write(&dir.join("cpu.max"), &cpu_max(q))?;
        read_back(&mut readback, &dir, "cpu.max");
        c.cpu_dir = Some(dir.clone());
    }
    if let Some(m) = req.memory_max_bytes {
        write(&dir.join("memory.max"), &m.to_string())?;
        if let Err(e) = std::fs::write(dir.join("memory.swap.max"), "0") {
            notes.push(swap_note("memory.swap.max", &e));
        }
        read_back(&mut readback, &dir, "memory.max");
        c.memory_dir = Some(dir.clone());
    }
    let dirs = vec![dir.display().to_string()];
    c.record = Some(applied_limits("cgroup-v2", role, dirs, readback, notes));
    Ok(c)
}

const COUNTERS: CounterFiles = CounterFiles {
    throttled_key: "throttled_usec",
    throttled_per_us: 1,
    peak_file: "memory.peak",
    events_file: "memory.events",
};

pub fn counters(c: &Confinement) -> CgroupCounters {
    read_counters(c, &COUNTERS)
}

#[cfg(test)]
mod tests {
    use super::super::tests::check_counters;
    use super::*;

    #[test]
    fn counters_read_the_v2_files() {
        check_counters(
            "v2",
            &[
                (
                    "cpu.stat",
                    "usage_usec 99\nnr_periods 40\nnr_throttled 5\nthrottled_usec 7000\n",
                ),
                ("memory.peak", "1048576\n"),
                ("memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 2\n"),
            ],
            counters,
        );
    }

    #[test]
    fn cpu_max_is_quota_and_period() {
        assert_eq!(cpu_max(1.0), "100000 100000");
        assert_eq!(cpu_max(0.5), "50000 100000");
        assert_eq!(cpu_max(0.0001), "1000 100000");
    }
}
