//! The environment record written once per run (run.json `environment`).

pub mod hardware;
pub mod provenance;
pub mod toolchain;

use std::collections::BTreeMap;
use std::path::Path;

use crate::results::schema::Environment;

/// `origins`: the binaries not built from the checkout (variants, `command` services).
pub fn collect(
    config_path: &Path,
    loadgen: &Path,
    binaries: BTreeMap<String, String>,
    origins: &BTreeMap<String, provenance::Origin>,
) -> Environment {
    let source = toolchain::source(config_path);
    let version = toolchain::loadgen_version(loadgen);
    let binary_builds = provenance::binary_builds(&binaries);
    Environment {
        provenance_warnings: provenance::warnings(&source, &binary_builds, origins),
        binary_builds,
        hardware: hardware::hardware(),
        os: hardware::os(),
        cgroup: hardware::cgroup(),
        io_uring: hardware::io_uring(),
        net: hardware::net(),
        toolchain: toolchain::toolchain(),
        source,
        provenance: provenance::provenance(),
        loadgen_version: version.as_ref().and_then(|v| toolchain::version_line(v)),
        loadgen_identity: version.as_ref().and_then(|v| toolchain::identity_line(v)),
        variants: Vec::new(),
        binaries,
    }
}
