//! Which cgroup hierarchy this machine offers: used by `limits` to choose how a profile is
//! applied, and recorded in run.json by `env`.

use std::path::Path;

pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    V1,
    V2,
    None,
}

pub fn version() -> CgroupVersion {
    let root = Path::new(CGROUP_ROOT);
    if root.join("cgroup.controllers").exists() {
        CgroupVersion::V2
    } else if root.join("cpu").exists()
        || root.join("cpuset").exists()
        || root.join("memory").exists()
    {
        CgroupVersion::V1
    } else {
        CgroupVersion::None
    }
}
