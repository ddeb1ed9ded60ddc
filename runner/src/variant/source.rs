//! A variant's own source tree: the files of its commit (`git archive`, so the checkout's
//! working tree and other worktrees are never touched), each pin written into the tree's
//! Cargo.toml as an exact requirement (`=1.51.0` in `[workspace.dependencies]`) and
//! resolved into the tree's own Cargo.lock with `cargo update --precise`; each patch
//! written as `[patch.crates-io]` and resolved offline (`cargo update --offline --package`),
//! refused when cargo leaves it unused (its version does not meet the tree's requirement).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use super::output::tail;
use crate::config::VariantDef;

/// Extracts the commit into `dir/src` and applies the pins and patches; the tree's path.
pub fn prepare(
    v: &VariantDef,
    dir: &Path,
    patches: &[super::patch::Resolved],
) -> anyhow::Result<PathBuf> {
    let src = dir.join("src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).with_context(|| format!("create {}", src.display()))?;
    super::output::extract(&v.repo, &v.commit, &src)?;
    for (krate, (version, at)) in &v.pins {
        pin(&src, krate, version).map_err(|e| {
            anyhow::anyhow!(
                "{at}: pin {krate} = {version:?} for variant {}@{}: {e}",
                v.base,
                v.name
            )
        })?;
    }
    if !patches.is_empty() {
        let mut dirs = Vec::new();
        for r in patches {
            dirs.push((r, super::patch::materialize(r, dir)?));
        }
        patch(&src, &dirs).map_err(|e| {
            let at: Vec<String> = patches
                .iter()
                .map(|r| format!("{} (patch {})", r.def.at, r.krate))
                .collect();
            anyhow::anyhow!("{}: variant {}@{}: {e:#}", at.join(", "), v.base, v.name)
        })?;
    }
    Ok(src)
}

/// Writes each crate's directory into the tree's `[patch.crates-io]` and resolves the lock
/// offline; Err when cargo cannot or leaves a patch unused.
fn patch(src: &Path, dirs: &[(&super::patch::Resolved, PathBuf)]) -> anyhow::Result<()> {
    let manifest = src.join("Cargo.toml");
    let mut doc: toml::Table = toml::from_str(&std::fs::read_to_string(&manifest)?)?;
    let table = doc
        .entry("patch")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .context("[patch] is not a table")?
        .entry("crates-io")
        .or_insert_with(|| toml::Value::Table(Default::default()))
        .as_table_mut()
        .context("[patch.crates-io] is not a table")?;
    for (r, d) in dirs {
        let mut t = toml::Table::new();
        t.insert("path".into(), toml::Value::String(d.display().to_string()));
        table.insert(r.krate.clone(), toml::Value::Table(t));
    }
    std::fs::write(&manifest, toml::to_string(&doc)?)?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(src).args(["update", "--offline"]);
    for (r, _) in dirs {
        cmd.args(["--package", &r.krate]);
    }
    let out = super::output::run(cmd)?;
    if !out.status.success() {
        bail!(
            "the patch does not resolve: {}",
            tail(out.stderr.as_bytes(), 4)
        );
    }
    let lock: toml::Table = toml::from_str(&std::fs::read_to_string(src.join("Cargo.lock"))?)?;
    for (r, d) in dirs {
        let unused = lock
            .get("patch")
            .and_then(|p| p.get("unused"))
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(toml::Value::as_str) == Some(&r.krate));
        let patched = lock
            .get("package")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
            .any(|p| {
                p.get("name").and_then(toml::Value::as_str) == Some(&r.krate)
                    && p.get("source").is_none()
            });
        if unused.is_some() || !patched {
            let version = unused
                .and_then(|p| p.get("version"))
                .and_then(toml::Value::as_str)
                .map_or(String::new(), |v| format!(" (its version {v})"));
            bail!(
                "cargo did not use the patch of {}{version}: the source {} does not meet the \
                 tree's requirement for {}",
                r.krate,
                d.display(),
                r.krate
            );
        }
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
    let mut cmd = Command::new("cargo");
    cmd.current_dir(src)
        .args(["update", "--package", krate, "--precise", version]);
    let out = super::output::run(cmd)?;
    if !out.status.success() {
        bail!("does not resolve: {}", tail(out.stderr.as_bytes(), 4));
    }
    Ok(())
}
