//! CPU affinity masks for `sched_setaffinity`.

pub fn cpu_set(cpus: &[u32]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain bits; CPU_SET only touches indices < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if (c as usize) < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c as usize, &mut set);
            }
        }
        set
    }
}

/// The affinity mask of a running process.
pub fn of_pid(pid: u32) -> Option<Vec<u32>> {
    // SAFETY: plain data filled by the kernel.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(pid as i32, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
            != 0
        {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .map(|c| c as u32)
                .collect(),
        )
    }
}
