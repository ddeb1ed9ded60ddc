//! The matrix file: its TOML schema, validation, and the validated `Matrix` the plan uses.

pub mod schema;
pub mod validate;

use std::path::PathBuf;

use loadgen::LoadModel;

use crate::results::schema::{Placement, ProfileLimits};

pub use validate::{ConfigError, ConfigErrors, load};

/// A validated matrix file with binaries resolved to paths.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub path: PathBuf,
    /// Verbatim text (copied into run.json).
    pub text: String,
    pub timing: Timing,
    pub startup_timeout_ms: u64,
    pub stop_grace_ms: u64,
    pub request_timeout_ms: u64,
    pub loadgen_threads: u32,
    pub loadgen: PathBuf,
    /// "service/scenario/level/profile".
    pub reference: Option<String>,
    /// Re-runs of the reference cell through the run.
    pub drift_points: u32,
    /// The service the others are judged against.
    pub baseline: String,
    /// Adaptive repetitions: the CI half-width target (percent) and the cap.
    pub target_ci_pct: Option<f64>,
    pub max_repetitions: u32,
    /// Whether each repetition counts syscalls in a window of its own (`defaults.count_syscalls`).
    pub count_syscalls: bool,
    pub calibration: Option<CalibrationDef>,
    pub quick: Option<QuickDef>,
    pub services: Vec<ServiceDef>,
    pub scenarios: Vec<ScenarioDef>,
    pub profiles: Vec<ProfileDef>,
    /// `[[hosts]]`: machines driven over SSH (empty for a single-machine matrix).
    pub hosts: Vec<HostDef>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub warmup_ms: u64,
    pub duration_ms: u64,
    pub repetitions: u32,
    pub cooldown_ms: u64,
}

#[derive(Debug, Clone)]
pub struct CalibrationDef {
    pub service: String,
    /// "scenario/level/profile".
    pub cells: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct QuickDef {
    /// "scenario/level/profile".
    pub cells: Vec<String>,
    pub warmup_ms: Option<u64>,
    pub duration_ms: Option<u64>,
    pub repetitions: Option<u32>,
    pub cooldown_ms: Option<u64>,
    pub count_syscalls: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct ServiceDef {
    pub name: String,
    /// The executable (for a variant: where its build will be, set by `variant`).
    pub binary: PathBuf,
    /// For a suite service, extra arguments after `--listen`/`--workers`; for an external
    /// one, its whole argument template (`external`).
    pub args: Vec<String>,
    /// `command = [...]`: a server the suite did not write, started with `args` as the
    /// template (no `--listen`/`--workers`, no start-up line).
    pub external: bool,
    /// A variant of another entry: what to build.
    pub variant: Option<VariantDef>,
    /// Why the service cannot be started (a variant whose build failed); its cells fail
    /// with this reason and the run goes on.
    pub unavailable: Option<String>,
}

/// `[[services.variants]]`, validated: the revision resolved to a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct VariantDef {
    /// The `[[services]]` entry it is a variant of.
    pub base: String,
    pub name: String,
    /// The binary's name (the base entry's `binary`).
    pub binary_name: String,
    pub rev: String,
    pub commit: String,
    /// The pingmatrix checkout `rev` is read from.
    pub repo: PathBuf,
    /// Which checkout that is, as run.json says it: "the matrix file's checkout", "the
    /// checkout matrix was built in", or `repo = "…"` as written.
    pub repo_from: String,
    /// crate → (version, "file:line:col" of the pin, for resolution errors).
    pub pins: std::collections::BTreeMap<String, (String, String)>,
    /// crate → where to take it from instead (`[patch.crates-io]` in the variant's tree).
    pub patches: std::collections::BTreeMap<String, PatchDef>,
}

/// A variant's `patch` entry, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchDef {
    pub source: PatchSource,
    /// "file:line:col" of the entry, for errors found while preparing the tree.
    pub at: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PatchSource {
    /// A directory holding the crate's Cargo.toml: `written` as in the matrix file, `dir`
    /// resolved (absolute).
    Path { written: String, dir: PathBuf },
    /// A git repository at a revision: `url` as written; `local` the repository on this
    /// machine (a `file://` URL or a path), whose `rev` was resolved to `commit` while the
    /// matrix file was checked. A remote URL is fetched (and `commit` resolved) when the
    /// variant is prepared.
    Git {
        url: String,
        local: Option<PathBuf>,
        rev: String,
        commit: Option<String>,
    },
}

#[derive(Debug, Clone)]
pub struct ScenarioDef {
    pub name: String,
    pub path: String,
    pub keepalive: bool,
    pub expect_body_bytes: Option<u64>,
    /// Extra request headers, "Name: value", in the order sent.
    pub headers: Vec<String>,
    /// The protocol every request is sent in (HTTP/1.1 unless the scenario says "h2").
    pub protocol: loadgen::Protocol,
    pub levels: Vec<Level>,
    pub profiles: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub struct Level {
    /// "c64", "c16p16", "c64s10" (HTTP/2 streams), "r20000".
    pub label: String,
    /// For churn levels, a closed-model stand-in with the same connections (never given
    /// to loadgen).
    pub model: LoadModel,
    pub churn: Option<crate::results::churn::ChurnSpec>,
}

#[derive(Debug, Clone)]
pub struct ProfileDef {
    pub name: String,
    pub limits: ProfileLimits,
    /// Set when the profile names `server_host` or `loadgen_hosts`: its cells run through
    /// the host agents (`host`), even when every host is "local".
    pub placement: Option<Placement>,
}

/// The name profiles use for the runner's own machine.
pub const LOCAL_HOST: &str = "local";

/// One `[[hosts]]` entry, validated: an SSH destination and where binaries go on it.
#[derive(Debug, Clone, PartialEq)]
pub struct HostDef {
    pub name: String,
    /// SSH host name or address.
    pub host: String,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// Resolved against the matrix file's directory.
    pub identity_file: Option<PathBuf>,
    /// Where services listen / generators connect; None = `host` (resolved at run start).
    pub address: Option<String>,
    /// Absolute directory for shipped binaries.
    pub work_dir: String,
    /// "Key=Value" options for `ssh -o`.
    pub ssh_options: Vec<String>,
}

impl HostDef {
    /// `[user@]host` as ssh takes it.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(u) => format!("{u}@{}", self.host),
            None => self.host.clone(),
        }
    }
}

/// The pingmatrix checkout this `matrix` belongs to: the first directory above its binary
/// (`<checkout>/target/release/matrix`) that holds `services/services.toml` and is a git
/// checkout — else the working directory's, if it is one. Variants of a matrix file kept
/// outside pingmatrix are built from it.
pub fn home_checkout() -> Option<PathBuf> {
    let is_pingmatrix = |d: &std::path::Path| {
        d.join("services").join("services.toml").is_file() && d.join(".git").exists()
    };
    let exe = std::env::current_exe().ok()?.canonicalize().ok();
    let from_exe = exe
        .as_deref()
        .and_then(|e| e.ancestors().skip(1).find(|d| is_pingmatrix(d)))
        .map(std::path::Path::to_path_buf);
    from_exe.or_else(|| {
        let cwd = std::env::current_dir().ok()?;
        cwd.ancestors()
            .find(|d| is_pingmatrix(d))
            .map(std::path::Path::to_path_buf)
    })
}
