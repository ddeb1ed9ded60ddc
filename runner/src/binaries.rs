//! Finding executables: a name with a '/' is a path (relative to the matrix file); a bare
//! name is looked up next to the running `matrix` (same target dir), then on PATH.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A path as results record it: relative to the working directory when inside it, so a
/// result set does not carry the layout of the machine that produced it; absolute otherwise.
pub fn display_path(p: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| p.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| p.to_path_buf())
        .display()
        .to_string()
}

/// The file's sha256 as read now (hex): what run.json records of a binary, and what a
/// binary is checked against before it runs (shipped to a host, taken from the variant cache).
pub fn sha256_file(p: &Path) -> Result<String, String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

/// Directory of the running executable.
pub fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

pub fn resolve_binary(name: &str, base: &Path, exe_dir: Option<&Path>) -> Result<PathBuf, String> {
    if name.is_empty() {
        return Err("binary name is empty".into());
    }
    if name.contains('/') {
        let p = base.join(name);
        return if is_executable(&p) {
            Ok(p)
        } else {
            Err(format!(
                "binary {} not found or not executable",
                p.display()
            ))
        };
    }
    let mut tried = Vec::new();
    if let Some(dir) = exe_dir {
        let p = dir.join(name);
        if is_executable(&p) {
            return Ok(p);
        }
        tried.push(dir.display().to_string());
    }
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        let p = dir.join(name);
        if is_executable(&p) {
            return Ok(p);
        }
    }
    tried.push("$PATH".into());
    Err(format!(
        "binary {name:?} not found (looked in {}; build it with `cargo build --release --workspace --bins`)",
        tried.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_path_and_rejects_missing() {
        assert!(resolve_binary("sh", Path::new("."), None).is_ok());
        assert!(resolve_binary("/bin/sh", Path::new("."), None).is_ok());
        let e = resolve_binary("definitely-not-a-binary-xyz", Path::new("."), None).unwrap_err();
        assert!(e.contains("not found"), "{e}");
    }

    #[test]
    fn paths_inside_the_working_directory_are_recorded_relative() {
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            display_path(&cwd.join("target/release/loadgen")),
            "target/release/loadgen"
        );
        assert_eq!(display_path(Path::new("/usr/bin/wrk")), "/usr/bin/wrk");
    }
}
