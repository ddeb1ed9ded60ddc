//! run.json: the run record — plan, status, hosts, floors and the environment it ran in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::analysis::Stat;
use super::cell::CellSpec;

// ---------------------------------------------------------------------------------------
// run.json
// ---------------------------------------------------------------------------------------

/// `results/<run-id>/run.json`: how, where and with what the run was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema_version: u32,
    pub run_id: String,
    pub started_unix_ms: u64,
    /// Set when the run ends (completed or interrupted); `None` while running or if killed.
    pub finished_unix_ms: Option<u64>,
    pub status: RunStatus,
    /// argv exactly as given.
    pub command_line: Vec<String>,
    pub quick: bool,
    /// `--fake-reps`: the id of the run whose recorded repetitions this replayed — nothing
    /// here was measured. `compare` refuses it (without `--force`), the site says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_of: Option<String>,
    /// `--target-ci` as given (resume expands the same plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci_pct: Option<f64>,
    /// `matrix calibrate`: the run holds only the calibration.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calibration_only: bool,
    /// `--only` filters as given.
    pub only: Vec<String>,
    /// Path of the matrix file as given on the command line.
    pub config_path: String,
    /// The matrix file, verbatim.
    pub config_toml: String,
    pub config_sha256: String,
    /// Every cell of the expanded plan, in execution order.
    pub plan: Vec<CellSpec>,
    /// The (service, scenario) pairs not run because the service does not serve the
    /// scenario's protocol: "n/a" in every view, never 0, never failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<NotApplicable>,
    pub estimated_duration_s: f64,
    pub environment: Environment,
    /// The harness's floors, measured when the run started (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floors: Option<Floors>,
    /// `matrix run --flamegraph`: perf as probed once at the start of the run, or why it is
    /// not available. Absent for runs without flame graphs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flamegraph: Option<FlamegraphProbe>,
    /// Multi-host runs: every host a cell used, its environment and the binaries shipped to
    /// it. Absent for single-machine runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRecord>,
}

/// A service not run in a scenario because it does not serve the scenario's protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotApplicable {
    pub service: String,
    pub scenario: String,
    pub protocol: loadgen::Protocol,
}

impl NotApplicable {
    /// "n/a: ping-epoll does not serve h2c", as every view writes it.
    pub fn words(&self) -> String {
        format!(
            "n/a: {} does not serve {}",
            self.service,
            self.protocol.name()
        )
    }

    /// A table row's `columns` cells: the words, then "n/a".
    pub fn row(&self, columns: usize) -> String {
        let mut cells = vec!["n/a".to_string(); columns.max(1)];
        cells[0] = self.words();
        cells.join(" | ")
    }
}

/// One host of a multi-host run as the runner found it when the run (or its resumption)
/// started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostRecord {
    /// The `[[hosts]]` name ("local" = the runner's machine).
    pub name: String,
    /// `[user@]host[:port]` as ssh was given it; "local" for the runner's machine.
    pub destination: String,
    /// Where a service on it listens / generators connect.
    pub address: Option<String>,
    /// The binaries run there: sha256 on this machine, and as checked on arrival.
    pub binaries: BTreeMap<String, ShippedBinary>,
    /// Its clock minus the runner's, estimated over the SSH channel (µs); only used to
    /// line up the server's CPU samples with the generators' windows.
    pub clock_offset_us: Option<i64>,
    /// Round trip of that estimate (µs): the offset is good to about half of it.
    pub clock_rtt_us: Option<u64>,
    /// The host's own environment record (the fields run.json has for this machine).
    pub environment: Option<Environment>,
    /// Why the host could not be used (its cells failed with this reason).
    pub unavailable: Option<String>,
}

/// One binary on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShippedBinary {
    /// Path on this machine.
    pub local_path: String,
    /// Path on the host.
    pub remote_path: String,
    pub sha256: String,
    /// "local" (run in place), "copied" (sent over ssh), "cached" (already there with the
    /// same sha256) or "nix-copy" (`nix copy --to ssh://`).
    pub via: String,
    /// sha256 computed on the host after arrival equals `sha256`.
    pub verified: bool,
}

/// What the harness itself costs on this machine, measured at the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Floors {
    pub startup: StartupFloor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<MachineFloor>,
}

/// `pingmatrix-responder` (bind, answer one /ping, exit) started through the services' own
/// path: the least start-up time this runner can report here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartupFloor {
    pub binary: String,
    /// exec → first 200, over the samples.
    pub first_200_us: Option<Stat>,
    /// spawn call → exec (fork, confinement), over the samples.
    pub launch_us: Option<Stat>,
    /// Why it was not measured.
    pub unavailable: Option<String>,
    /// How the services (and the responder) were launched: vfork-style, or fork and why
    /// the clone was refused. Absent in runs before the runner launched vfork-style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<String>,
    /// What precedes every measured start (the responder's here and the services'): an
    /// unmeasured warm-up start of the same command. Absent in runs without warm-ups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warm_up: Option<String>,
}

/// `loadgen --floor` on the generator's CPU: timer wake-up lateness at the run's open-loop
/// rates and a loopback echo round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MachineFloor {
    pub report: Option<loadgen::floor::Floor>,
    /// Why it was not measured.
    pub unavailable: Option<String>,
}

/// perf as `matrix run --flamegraph` found it at the start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum FlamegraphProbe {
    Available {
        perf_version: String,
        event: String,
        hardware_counters: bool,
        perf_event_paranoid: Option<i32>,
        call_graph: super::CallGraph,
        frequency_hz: u32,
        /// Whether inlined functions are frames of their own (`--flamegraph-no-inline`
        /// turns it off). Runs before the option had them: absent reads as true.
        #[serde(default = "inlined", skip_serializing_if = "is_inlined")]
        inline_frames: bool,
    },
    NotAvailable {
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    Completed,
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hardware: Hardware,
    pub os: Os,
    pub cgroup: CgroupEnv,
    pub io_uring: IoUringEnv,
    pub net: NetEnv,
    pub toolchain: Toolchain,
    pub source: Source,
    pub provenance: Provenance,
    /// `loadgen --version`'s first line, "loadgen 0.1.0" (None if it could not be run).
    pub loadgen_version: Option<String>,
    /// loadgen's method identity (`loadgen::identity`): what `matrix compare` matches runs
    /// on. None in runs made before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loadgen_identity: Option<String>,
    /// The service variants built for this run (`variant`), one per variant.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<crate::results::variants::VariantRecord>,
    /// Resolved absolute paths of every binary used.
    pub binaries: BTreeMap<String, String>,
    /// What each of those binaries is: its bytes' sha256 and the build stamp found in them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub binary_builds: BTreeMap<String, BinaryBuild>,
    /// Where the binaries and the checkout disagree (also printed when the run starts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provenance_warnings: Vec<String>,
}

/// One binary's identity, read from the file itself (nothing is run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryBuild {
    pub path: String,
    /// None when the file could not be read.
    pub sha256: Option<String>,
    /// The commit in its build stamp; None when it carries no stamp (not built from this
    /// workspace, or before stamps existed).
    pub build_commit: Option<String>,
    /// Whether the checkout had uncommitted changes when it was built (None: unknown).
    pub build_dirty: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    pub cpu_model: String,
    pub cpu_vendor: String,
    pub physical_cores: Option<usize>,
    pub logical_cpus: usize,
    pub cpu_frequency_mhz: Option<u64>,
    /// `scaling_governor` of cpu0, or None when cpufreq is not exposed (typical in VMs).
    pub frequency_governor: Option<String>,
    pub memory_total_bytes: u64,
    /// Hypervisor / container detection, e.g. "kvm", "none", with how it was detected.
    pub virtualization: String,
    pub arch: String,
    /// How an idle CPU waits (None: not exposed, or a run older than the field). On a VM a
    /// halted vCPU is woken through the hypervisor, so this moves latency and the CPU price
    /// of every wake-up severalfold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_idle: Option<CpuIdle>,
}

/// `/sys/devices/system/cpu/cpuidle` and, for the guest haltpoll driver, its polling window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuIdle {
    pub driver: Option<String>,
    pub governor: Option<String>,
    /// `haltpoll.guest_halt_poll_ns`: how long an idle vCPU polls before it halts (0: it halts
    /// at once).
    pub guest_halt_poll_ns: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Os {
    pub kernel: String,
    pub os: String,
    pub hostname: String,
    /// `/sys/kernel/rcu_expedited`: whether grace periods are expedited. Start-ups that wait
    /// for one (glommio's `membarrier` registration) take 1–4 scheduler ticks longer without.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcu_expedited: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CgroupEnv {
    /// "v2", "v1" (possibly hybrid) or "none".
    pub version: String,
    /// Contents of /proc/self/cgroup.
    pub self_cgroup: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoUringEnv {
    /// `kernel.io_uring_disabled` (0 allowed, 1 restricted, 2 off); None on kernels without it.
    pub io_uring_disabled: Option<u8>,
    /// The `Seccomp:` line of /proc/self/status (0 none, 1 strict, 2 filter).
    pub seccomp: Option<String>,
    /// `ulimit -l` (RLIMIT_MEMLOCK soft) in bytes; None = unlimited.
    pub memlock_limit_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetEnv {
    pub somaxconn: Option<u64>,
    pub tcp_max_syn_backlog: Option<u64>,
    pub ip_local_port_range: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Toolchain {
    /// `rustc -V` at run time, if a rustc is on PATH.
    pub rustc_runtime: Option<String>,
    /// `rustc -V` of the compiler that built `matrix` (recorded by build.rs).
    pub rustc_build: String,
    /// Cargo profile `matrix` was built with ("release" / "debug").
    pub build_profile: String,
    pub matrix_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The checkout the running `matrix` was built in (found from its own path), else the
    /// commit stamped into it at build time.
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// sha256 of Cargo.lock at run time (found next to the matrix file or above), else the
    /// one recorded when `matrix` was built.
    pub cargo_lock_sha256: Option<String>,
    pub cargo_lock_origin: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// True when PINGMATRIX_FLAKE_REV was set by the Nix flake wrapper.
    pub via_nix_flake: bool,
    pub flake_rev: Option<String>,
    pub nixpkgs_rev: Option<String>,
    /// Human summary, e.g. "not run through the flake".
    pub note: String,
}

fn inlined() -> bool {
    true
}

fn is_inlined(inline_frames: &bool) -> bool {
    *inline_frames
}
