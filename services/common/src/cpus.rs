//! The CPUs this process may run on: the affinity mask (which already reflects a cgroup cpuset),
//! not the machine's CPU count. The one reader of the mask: the runner uses it too, and
//! loadgen reads its own through the same `nix` call.

use nix::sched::{CpuSet, sched_getaffinity};
use nix::unistd::Pid;

/// CPU ids in this thread's affinity mask, ascending. Falls back to `0..available_parallelism`
/// if the mask cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    let from_mask = sched_getaffinity(Pid::from_raw(0)).map(|set| {
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect::<Vec<usize>>()
    });
    match from_mask {
        Ok(cpus) if !cpus.is_empty() => cpus,
        _ => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Number of CPUs this process may run on (at least 1).
pub fn allowed_cpu_count() -> usize {
    allowed_cpus().len().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_is_non_empty_sorted_and_bounded_by_the_machine() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
        // SAFETY: sysconf has no preconditions.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) } as usize;
        assert!(cpus.len() <= online.max(1));
    }
}
