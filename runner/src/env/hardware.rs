//! Machine facts: CPU, memory, kernel/OS, virtualization, cgroups, io_uring policy, sockets.

use sysinfo::System;

use crate::limits::cgroup::{self, CgroupVersion};
use crate::results::schema::{CgroupEnv, CpuIdle, Hardware, IoUringEnv, NetEnv, Os};

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn virtualization() -> String {
    // Exits 1 with "none" on bare metal: its answer counts whatever the status.
    let cmd = std::process::Command::new("systemd-detect-virt");
    if let Ok((_, s)) = crate::process::output_within(cmd, std::time::Duration::from_secs(5))
        && !s.is_empty()
    {
        return format!("{s} (systemd-detect-virt)");
    }
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let hv = flags
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let product = read("/sys/class/dmi/id/product_name").unwrap_or_default();
    let vendor = read("/sys/class/dmi/id/sys_vendor").unwrap_or_default();
    let container = std::path::Path::new("/.dockerenv").exists()
        || std::path::Path::new("/run/.containerenv").exists();
    match (hv, container) {
        (true, _) => format!("vm (cpuid hypervisor flag; dmi: {vendor} {product})")
            .trim()
            .to_string(),
        (false, true) => "container".into(),
        (false, false) => format!("none detected (dmi: {vendor} {product})"),
    }
}

pub fn hardware() -> Hardware {
    let sys = System::new_all().ok();
    let cpus = sys.as_ref().map(|s| s.cpus()).unwrap_or_default();
    Hardware {
        cpu_model: cpus
            .first()
            .map(|c| c.brand().trim().to_string())
            .unwrap_or_default(),
        cpu_vendor: cpus
            .first()
            .map(|c| c.vendor_id().to_string())
            .unwrap_or_default(),
        physical_cores: System::physical_core_count().ok(),
        logical_cpus: if cpus.is_empty() {
            std::thread::available_parallelism().map_or(0, |n| n.get())
        } else {
            cpus.len()
        },
        cpu_frequency_mhz: cpus.first().map(|c| c.frequency()).filter(|f| *f > 0),
        frequency_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        memory_total_bytes: sys.as_ref().map_or(0, |s| s.total_memory()),
        virtualization: virtualization(),
        arch: System::cpu_arch(),
        cpu_idle: cpu_idle(),
    }
}

fn cpu_idle() -> Option<CpuIdle> {
    let dir = "/sys/devices/system/cpu/cpuidle";
    let idle = CpuIdle {
        driver: read(&format!("{dir}/current_driver")),
        governor: read(&format!("{dir}/current_governor"))
            .or_else(|| read(&format!("{dir}/current_governor_ro"))),
        guest_halt_poll_ns: read("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
            .and_then(|v| v.parse().ok()),
    };
    (idle.driver.is_some() || idle.governor.is_some() || idle.guest_halt_poll_ns.is_some())
        .then_some(idle)
}

pub fn os() -> Os {
    Os {
        kernel: System::kernel_version()
            .unwrap_or_else(|_| read("/proc/sys/kernel/osrelease").unwrap_or_default()),
        os: System::long_os_version().unwrap_or_default(),
        hostname: System::host_name().unwrap_or_default(),
        rcu_expedited: read("/sys/kernel/rcu_expedited").map(|v| v == "1"),
    }
}

pub fn cgroup() -> CgroupEnv {
    CgroupEnv {
        version: match cgroup::version() {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
            CgroupVersion::None => "none",
        }
        .into(),
        self_cgroup: read("/proc/self/cgroup").unwrap_or_default(),
    }
}

pub fn io_uring() -> IoUringEnv {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } == 0;
    IoUringEnv {
        io_uring_disabled: read("/proc/sys/kernel/io_uring_disabled").and_then(|s| s.parse().ok()),
        seccomp: status
            .lines()
            .find(|l| l.starts_with("Seccomp:"))
            .map(|l| l.trim().to_string()),
        memlock_limit_bytes: (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur),
    }
}

pub fn net() -> NetEnv {
    NetEnv {
        somaxconn: read("/proc/sys/net/core/somaxconn").and_then(|s| s.parse().ok()),
        tcp_max_syn_backlog: read("/proc/sys/net/ipv4/tcp_max_syn_backlog")
            .and_then(|s| s.parse().ok()),
        ip_local_port_range: read("/proc/sys/net/ipv4/ip_local_port_range")
            .map(|s| s.split_whitespace().collect::<Vec<_>>().join("-")),
    }
}
