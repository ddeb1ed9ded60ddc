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

/// What a finished command left: its status and the last lines of its stderr.
pub(super) struct Done {
    pub status: std::process::ExitStatus,
    pub stderr: String,
}

/// Runs `cmd` (cargo) in a process group of its own, polling for Ctrl-C/SIGTERM: on one the
/// whole group (cargo and its rustc children) is killed at once and this is Err —
/// `Command::output` would wait for a build minutes long while the run was being stopped.
pub(super) fn run(cmd: Command) -> anyhow::Result<Done> {
    let what = format!("{:?}", cmd.get_program());
    let mut p = crate::process::Proc::spawn(cmd, &Default::default())
        .with_context(|| format!("run {what}"))?;
    let status = loop {
        if let Some(s) = p.try_wait() {
            break s;
        }
        if crate::interrupt::requested() {
            p.kill();
            bail!(Interrupted);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Ok(Done {
        status,
        stderr: p.stderr_tail().unwrap_or_default(),
    })
}

/// A variant's preparation stopped by Ctrl-C/SIGTERM (`matrix` exits 130).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted while preparing the variants: their builds were stopped")
    }
}

impl std::error::Error for Interrupted {}

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
