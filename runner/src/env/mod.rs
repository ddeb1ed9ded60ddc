//! The environment record written once per run (run.json `environment`).

pub mod cgroup;
pub mod hardware;
pub mod provenance;
pub mod toolchain;

use std::collections::BTreeMap;
use std::path::Path;

use crate::results::schema::Environment;

pub fn collect(
    config_path: &Path,
    loadgen: &Path,
    binaries: BTreeMap<String, String>,
) -> Environment {
    Environment {
        hardware: hardware::hardware(),
        os: hardware::os(),
        cgroup: hardware::cgroup(),
        io_uring: hardware::io_uring(),
        net: hardware::net(),
        toolchain: toolchain::toolchain(),
        source: toolchain::source(config_path),
        provenance: provenance::provenance(),
        loadgen_version: toolchain::loadgen_version(loadgen),
        binaries,
    }
}
