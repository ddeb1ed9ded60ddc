//! A variant's own source tree: the files of its commit (`git archive`, so the checkout's
//! working tree and other worktrees are never touched), each pin written into the tree's
//! Cargo.toml as an exact requirement (`=1.51.0` in `[workspace.dependencies]`) and
//! resolved into the tree's own Cargo.lock with `cargo update --precise`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::config::VariantDef;

/// The last lines of a command's output: what an error message quotes.
pub(super) fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join(" | ")
}

/// Extracts the commit into `dir/src` and applies the pins; the tree's path.
pub fn prepare(v: &VariantDef, dir: &Path) -> anyhow::Result<PathBuf> {
    let src = dir.join("src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).with_context(|| format!("create {}", src.display()))?;
    extract(v, &src)?;
    for (krate, (version, at)) in &v.pins {
        pin(&src, krate, version).map_err(|e| {
            anyhow::anyhow!(
                "{at}: pin {krate} = {version:?} for variant {}@{}: {e}",
                v.base,
                v.name
            )
        })?;
    }
    Ok(src)
}

fn extract(v: &VariantDef, src: &Path) -> anyhow::Result<()> {
    let mut git = Command::new("git")
        .arg("-C")
        .arg(&v.repo)
        .args(["archive", "--format=tar", &v.commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("run git archive")?;
    let out = git.stdout.take().context("git archive's output")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(src)
        .stdin(out)
        .output()
        .context("run tar")?;
    let g = git.wait_with_output().context("wait for git archive")?;
    if !g.status.success() || !tar.status.success() {
        bail!(
            "could not extract commit {} of {}: {}{}",
            v.commit,
            v.repo.display(),
            tail(&g.stderr, 3),
            tail(&tar.stderr, 3)
        );
    }
    Ok(())
}

/// Makes `krate` an exact requirement in the tree's workspace manifest and resolves it.
fn pin(src: &Path, krate: &str, version: &str) -> anyhow::Result<()> {
    let manifest = src.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)?;
    let mut doc: toml::Table = toml::from_str(&text)?;
    let exact = toml::Value::String(format!("={version}"));
    let dep = doc
        .get_mut("workspace")
        .and_then(|w| w.get_mut("dependencies"))
        .and_then(|d| d.get_mut(krate));
    match dep {
        Some(toml::Value::Table(t)) => {
            t.insert("version".into(), exact);
        }
        Some(d @ toml::Value::String(_)) => *d = exact,
        _ => bail!("{krate} is not in [workspace.dependencies] of this revision"),
    }
    std::fs::write(&manifest, toml::to_string(&doc)?)?;
    let out = Command::new("cargo")
        .current_dir(src)
        .args(["update", "--package", krate, "--precise", version])
        .stdin(Stdio::null())
        .output()
        .context("run cargo update")?;
    if !out.status.success() {
        bail!("does not resolve: {}", tail(&out.stderr, 4));
    }
    Ok(())
}

/// Resolved versions of `crates` in the tree's Cargo.lock (a crate locked twice: both).
pub fn resolved(src: &Path, crates: &[&str]) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(src.join("Cargo.lock")) else {
        return out;
    };
    let Ok(lock) = toml::from_str::<toml::Table>(&text) else {
        return out;
    };
    for p in lock
        .get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(n), Some(v)) = (
            p.get("name").and_then(toml::Value::as_str),
            p.get("version").and_then(toml::Value::as_str),
        ) else {
            continue;
        };
        if crates.contains(&n) {
            out.entry(n.to_string())
                .or_insert_with(Vec::new)
                .push(v.to_string());
        }
    }
    out
}
