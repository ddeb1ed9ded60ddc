//! Toolchain and source identity: rustc (now and at build), Cargo.lock hash, git commit.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::results::schema::{Source, Toolchain};

/// How long a helper command (rustc -V, git, loadgen --version) may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(5);

/// Stdout of a helper that exited 0 within its time.
pub(crate) fn output(cmd: &mut Command) -> Option<String> {
    let cmd = std::mem::replace(cmd, Command::new(""));
    match crate::process::output_within(cmd, HELPER_TIMEOUT) {
        Ok((status, out)) if status.success() => Some(out),
        _ => None,
    }
}

pub fn toolchain() -> Toolchain {
    Toolchain {
        rustc_runtime: output(Command::new("rustc").arg("-V")),
        rustc_build: env!("PINGMATRIX_BUILD_RUSTC").into(),
        build_profile: env!("PINGMATRIX_BUILD_PROFILE").into(),
        matrix_version: env!("CARGO_PKG_VERSION").into(),
    }
}

/// Directory of the matrix file, or "." (git and Cargo.lock are looked up from there).
fn base_dir(config: &Path) -> PathBuf {
    config
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn find_up(start: &Path, name: &str) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start.ancestors().map(|d| d.join(name)).find(|p| p.exists())
}

/// The commit and dirty flag of the checkout at `dir`, if it is one.
fn checkout(dir: &Path) -> (Option<String>, Option<bool>) {
    // `--no-optional-locks`: a run must not rewrite the index (stamp/build.rs watches it,
    // so the next build would rebuild every crate).
    let git = |args: &[&str]| {
        output(
            Command::new("git")
                .args(["--no-optional-locks", "-C"])
                .arg(dir)
                .args(args),
        )
    };
    let commit = git(&["rev-parse", "HEAD"]);
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    (commit, dirty)
}

/// Source identity. The commit is the checkout `matrix` itself lives in (the matrix file may
/// sit in another repository), or the commit stamped into `matrix` when that is no checkout
/// (a Nix store path). Cargo.lock is looked up from the matrix file's directory.
pub fn source(config: &Path) -> Source {
    let dir = base_dir(config);
    let (commit, dirty) = match crate::binaries::exe_dir().map(|d| checkout(&d)) {
        Some((Some(c), d)) => (Some(c), d),
        _ => {
            let own = pingmatrix_stamp::own();
            ((own.commit != "unknown").then_some(own.commit), own.dirty)
        }
    };
    let (lock, origin) =
        match find_up(&dir, "Cargo.lock").and_then(|p| std::fs::read(&p).ok().map(|b| (p, b))) {
            Some((p, bytes)) => (
                Some(format!("{:x}", Sha256::digest(&bytes))),
                format!("runtime: {}", crate::binaries::display_path(&p)),
            ),
            None => {
                let b = env!("PINGMATRIX_BUILD_CARGO_LOCK_SHA256");
                (
                    (b != "unknown").then(|| b.to_string()),
                    "build time (embedded in matrix)".into(),
                )
            }
        };
    Source {
        git_commit: commit,
        git_dirty: dirty,
        cargo_lock_sha256: lock,
        cargo_lock_origin: origin,
    }
}

/// The whole of `loadgen --version` (the parts are taken by [`version_line`] and
/// [`identity_line`]; its build stamp is recorded with the binaries).
pub fn loadgen_version(loadgen: &Path) -> Option<String> {
    output(Command::new(loadgen).arg("--version"))
}

/// The version: the first line, "loadgen 0.1.0".
pub fn version_line(version_output: &str) -> Option<String> {
    version_output.lines().next().map(|l| l.trim().to_string())
}

/// loadgen's method identity (`loadgen::identity`), from its "method: " line; None from a
/// loadgen that predates it.
pub fn identity_line(version_output: &str) -> Option<String> {
    version_output
        .lines()
        .find_map(|l| l.strip_prefix(loadgen::identity::LINE_PREFIX))
        .map(|l| l.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_and_identity_are_read_from_their_lines() {
        let out = "loadgen 0.1.0\nmethod: loadgen 0.1.0 src=aa deps=bb\npingmatrix-build commit=c dirty=false;\n";
        assert_eq!(version_line(out).as_deref(), Some("loadgen 0.1.0"));
        assert_eq!(
            identity_line(out).as_deref(),
            Some("loadgen 0.1.0 src=aa deps=bb")
        );
        let old = "loadgen pingmatrix-build commit=c dirty=false;\n";
        assert_eq!(identity_line(old), None);
    }
}
