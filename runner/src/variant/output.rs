//! The commands a variant's sources share, below source, patch and build: a commit's tree
//! extracted (`git archive | tar`), and what an error message quotes of a command's output.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The last lines of a command's output: what an error message quotes.
pub(super) fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// Extracts `commit` of the git repository `repo` into the directory `dest`.
pub(super) fn extract(repo: &Path, commit: &str, dest: &Path) -> anyhow::Result<()> {
    let mut git = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["archive", "--format=tar", "--end-of-options", commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("run git archive")?;
    let out = git.stdout.take().context("git archive's output")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(dest)
        .stdin(out)
        .output()
        .context("run tar")?;
    let g = git.wait_with_output().context("wait for git archive")?;
    if !g.status.success() || !tar.status.success() {
        bail!(
            "could not extract commit {commit} of {}: {}{}",
            repo.display(),
            tail(&g.stderr, 3),
            tail(&tar.stderr, 3)
        );
    }
    Ok(())
}
