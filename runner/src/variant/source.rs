//! A variant's own source tree: the files of its commit (`git archive`, so the checkout's
//! working tree and other worktrees are never touched), each pin written into the tree's
//! Cargo.toml as an exact requirement (`=1.51.0` in `[workspace.dependencies]`) and
//! resolved into the tree's own Cargo.lock with `cargo update --precise`; each patch
//! written as `[patch.crates-io]` and resolved offline (`cargo update --offline --package`),
//! refused when cargo leaves it unused (its version does not meet the tree's requirement).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .context("run cargo update")?;
    if !out.status.success() {
        bail!("the patch does not resolve: {}", tail(&out.stderr, 4));
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

/// Whether `package`'s dependency closure in the lock `text` has `krate` (the whole lock
/// when `package` is not in it; false when the text is not a lock).
pub fn depends_on(text: &str, package: &str, krate: &str) -> bool {
    let Ok(lock) = toml::from_str::<toml::Table>(text) else {
        return false;
    };
    let packages = packages(&lock);
    let linked = closure(&packages, package);
    packages
        .iter()
        .any(|(n, v, _)| n == krate && (linked.is_empty() || linked.contains(&(n, v))))
}

fn packages(lock: &toml::Table) -> Vec<(String, String, Vec<String>)> {
    lock.get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let n = p.get("name")?.as_str()?.to_string();
            let v = p.get("version")?.as_str()?.to_string();
            let deps = p
                .get("dependencies")
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_str().map(str::to_string))
                .collect();
            Some((n, v, deps))
        })
        .collect()
}

/// The `[package] name` of a Cargo.toml.
pub fn package_name(manifest: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", manifest.display()))?;
    doc.get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        .map(str::to_string)
        .with_context(|| format!("{} has no [package] name", manifest.display()))
}

/// Resolved versions of `crates` in the tree's Cargo.lock that are linked into `package`
/// (its dependency closure): the workspace lock also holds versions only other services use.
/// A crate linked twice: both. `package` not in the lock: every locked version.
pub fn resolved(
    src: &Path,
    package: &str,
    crates: &[&str],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(src.join("Cargo.lock")) else {
        return out;
    };
    let Ok(lock) = toml::from_str::<toml::Table>(&text) else {
        return out;
    };
    let packages = packages(&lock);
    let linked = closure(&packages, package);
    for (n, v, _) in &packages {
        if crates.contains(&n.as_str()) && (linked.is_empty() || linked.contains(&(n, v))) {
            out.entry(n.clone())
                .or_insert_with(Vec::new)
                .push(v.clone());
        }
    }
    out
}

/// (name, version) of every package reachable from `root` in the lock's dependency lists,
/// whose entries are "name" when the name is locked once, else "name version[ (source)]".
fn closure<'a>(
    packages: &'a [(String, String, Vec<String>)],
    root: &str,
) -> std::collections::BTreeSet<(&'a String, &'a String)> {
    let find = |entry: &str| {
        let mut parts = entry.split(' ');
        let name = parts.next().unwrap_or_default();
        let version = parts.next();
        packages
            .iter()
            .find(|(n, v, _)| n == name && version.is_none_or(|want| v == want))
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut todo: Vec<&(String, String, Vec<String>)> = find(root).into_iter().collect();
    while let Some(p) = todo.pop() {
        if seen.insert((&p.0, &p.1)) {
            todo.extend(p.2.iter().filter_map(|d| find(d)));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_counts_only_versions_linked_into_the_package() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-resolved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Cargo.lock"),
            r#"version = 4
[[package]]
name = "ping-a"
version = "0.1.0"
dependencies = ["hyper", "tokio 1.51.0"]
[[package]]
name = "ping-b"
version = "0.1.0"
dependencies = ["tokio 1.54.1"]
[[package]]
name = "hyper"
version = "1.0.0"
dependencies = ["tokio 1.51.0"]
[[package]]
name = "tokio"
version = "1.51.0"
[[package]]
name = "tokio"
version = "1.54.1"
"#,
        )
        .unwrap();
        let got = resolved(&dir, "ping-a", &["tokio", "hyper"]);
        assert_eq!(got["tokio"], vec!["1.51.0"]);
        assert_eq!(got["hyper"], vec!["1.0.0"]);
        let all = resolved(&dir, "not-there", &["tokio"]);
        let text = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
        assert!(depends_on(&text, "ping-a", "hyper"));
        assert!(!depends_on(&text, "ping-b", "hyper"));
        assert!(depends_on(&text, "not-there", "hyper"));
        assert!(!depends_on(&text, "ping-a", "httparse"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(all["tokio"], vec!["1.51.0", "1.54.1"]);
    }
}
