//! The CPUs this process may run on: the affinity mask (which already reflects a cgroup cpuset),
//! not the machine's CPU count.

/// CPU ids in this thread's affinity mask, ascending. Falls back to `0..available_parallelism`
/// if the mask cannot be read.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most size_of::<cpu_set_t>()
    // bytes into it, and CPU_ISSET only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
            if !cpus.is_empty() {
                return cpus;
            }
        }
    }
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    (0..n).collect()
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
