//! Reads the commit and dirty flag of the checkout being built. Re-runs when HEAD, the index
//! or any source of the workspace changes, so a binary's dirty flag is never stale. Where
//! there is no git (a Nix build, a source tarball) `PINGMATRIX_GIT_COMMIT` may name the
//! commit; otherwise it is "unknown".

use std::path::{Path, PathBuf};
use std::process::Command;

/// `--no-optional-locks`: `git status` otherwise refreshes the index it reads and writes it
/// back, and the index is watched below, so every build would make the next one rebuild the
/// stamp and every crate above it.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("..");
    let commit = git(&root, &["rev-parse", "HEAD"]);
    let dirty = commit
        .as_ref()
        .and_then(|_| git(&root, &["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    let (commit, dirty) = match (commit, dirty) {
        (Some(c), Some(d)) => (c, if d { "true" } else { "false" }),
        _ => (
            std::env::var("PINGMATRIX_GIT_COMMIT").unwrap_or_else(|_| "unknown".into()),
            "unknown",
        ),
    };
    println!("cargo:rustc-env=PINGMATRIX_STAMP_COMMIT={commit}");
    println!("cargo:rustc-env=PINGMATRIX_STAMP_DIRTY={dirty}");
    println!("cargo:rerun-if-env-changed=PINGMATRIX_GIT_COMMIT");
    // HEAD and the index live in the checkout's git dir; the branch HEAD names, and
    // packed-refs, in the common dir (the same one outside a worktree). Only that branch, not
    // all of refs/: in a worktree, another branch's commit would rebuild everything. Only
    // paths that exist: cargo treats a missing one as changed on every build.
    let git_dir = git(&root, &["rev-parse", "--absolute-git-dir"]);
    let common = git(&root, &["rev-parse", "--git-common-dir"])
        .map(|d| root.join(d))
        .and_then(|d| d.canonicalize().ok());
    if let (Some(git_dir), Some(common)) = (git_dir, common) {
        let mut files = vec![
            Path::new(&git_dir).join("HEAD"),
            Path::new(&git_dir).join("index"),
            // This checkout's reflog: every commit here, even to a branch only in packed-refs.
            Path::new(&git_dir).join("logs").join("HEAD"),
            common.join("packed-refs"),
        ];
        // Detached HEAD: no branch; HEAD itself changes.
        if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
            files.push(common.join(branch));
        }
        for f in files.iter().filter(|f| f.exists()) {
            println!("cargo:rerun-if-changed={}", f.display());
        }
    }
    for src in [
        "Cargo.toml",
        "Cargo.lock",
        "services",
        "loadgen",
        "runner",
        "stamp/src",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(src).display());
    }
}
