//! A variant's dependency sources (`patch`): where each patched crate comes from, resolved
//! before anything builds — a path's git commit, dirty flag and content hash; a git
//! source's revision as a commit (a remote URL fetched into a mirror under the variant cache
//! first) — then put where the variant's tree can take it with `[patch.crates-io]`: a path
//! as it is, a git revision as its files (`git archive`) in the variant's directory. The
//! content (commit, and for a path the hash of its files) goes into the cache key, so an
//! edited path rebuilds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::config::{PatchDef, PatchSource};
use crate::results::variants::PatchRecord;

/// A patch with its source resolved to content.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub krate: String,
    pub def: PatchDef,
    /// The git commit: a git source's revision; a path's repository's HEAD (None: the path
    /// is in no git repository).
    pub commit: Option<String>,
    /// A path in a git repository: whether it differs from that commit.
    pub dirty: Option<bool>,
    /// A path: the sha256 of its files (names and contents).
    pub content_sha256: Option<String>,
    /// A git source: the repository its commit is read from (local, or the fetched mirror).
    repo: Option<PathBuf>,
}

fn git_out(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Resolves every patch of a variant; Err names the entry's file:line:col.
pub fn resolve(
    patches: &std::collections::BTreeMap<String, PatchDef>,
    cache_root: &Path,
) -> anyhow::Result<Vec<Resolved>> {
    let mut out = Vec::new();
    for (krate, def) in patches {
        let r = resolve_one(krate, def, cache_root)
            .map_err(|e| anyhow::anyhow!("{}: patch {krate}: {e:#}", def.at))?;
        out.push(r);
    }
    Ok(out)
}

fn resolve_one(krate: &str, def: &PatchDef, cache_root: &Path) -> anyhow::Result<Resolved> {
    let mut r = Resolved {
        krate: krate.to_string(),
        def: def.clone(),
        commit: None,
        dirty: None,
        content_sha256: None,
        repo: None,
    };
    match &def.source {
        PatchSource::Path { dir, .. } => {
            r.content_sha256 = Some(content_hash(dir)?);
            if let Some(c) = git_out(dir, &["rev-parse", "--verify", "--quiet", "HEAD"]) {
                r.commit = Some(c);
                r.dirty = git_out(
                    dir,
                    &[
                        "status",
                        "--porcelain",
                        "--untracked-files=normal",
                        "--",
                        ".",
                    ],
                )
                .map(|s| !s.is_empty());
            }
        }
        PatchSource::Git {
            url,
            local,
            rev,
            commit,
        } => {
            let repo = match local {
                Some(l) => l.clone(),
                None => mirror(cache_root, url, rev)?,
            };
            let c = match commit {
                Some(c) => c.clone(),
                None => git_out(
                    &repo,
                    &[
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        "--end-of-options",
                        &format!("{rev}^{{commit}}"),
                    ],
                )
                .with_context(|| format!("revision {rev:?} does not exist in {url}"))?,
            };
            r.commit = Some(c);
            r.repo = Some(repo);
        }
    }
    Ok(r)
}

/// A bare mirror of a remote repository under the cache, fetched for `rev` (its branches
/// and tags, then the revision itself for a commit no ref names).
fn mirror(cache_root: &Path, url: &str, rev: &str) -> anyhow::Result<PathBuf> {
    let name = format!("{:x}", Sha256::digest(url.as_bytes()));
    let dir = cache_root.join("git").join(&name[..16]);
    if !dir.join("HEAD").exists() {
        std::fs::create_dir_all(&dir)?;
        git_out(&dir, &["init", "--bare", "--quiet"]).context("git init --bare")?;
    }
    let fetch = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&dir)
            // `--`: the URL and refspecs are never options, whatever validation let through.
            .args(["fetch", "--quiet", "--", url])
            .args(args)
            .stdin(Stdio::null())
            .output()
    };
    let all = fetch(&["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"])
        .context("run git fetch")?;
    if !all.status.success() {
        bail!(
            "cannot fetch {url}: {}",
            super::output::tail(&all.stderr, 3)
        );
    }
    if git_out(
        &dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .is_none()
    {
        let _ = fetch(&[rev]);
        if let Some(c) = git_out(&dir, &["rev-parse", "--verify", "--quiet", "FETCH_HEAD"]) {
            let _ = git_out(
                &dir,
                &["update-ref", "--", &format!("refs/pingmatrix/{c}"), &c],
            );
        }
    }
    Ok(dir)
}

/// Files of a path source, relative and sorted: those git would commit (tracked and
/// untracked but not ignored) when the path is in a git repository, else every file but
/// `target/` and `.git/`.
fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(list) = git_out(
        dir,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
            ".",
        ],
    ) {
        let mut v: Vec<PathBuf> = list
            .split('\0')
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .filter(|p| dir.join(p).is_file())
            .collect();
        v.sort();
        v.dedup();
        return Ok(v);
    }
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for e in std::fs::read_dir(dir.join(&rel))
            .with_context(|| format!("read {}", dir.join(&rel).display()))?
        {
            let e = e?;
            let name = rel.join(e.file_name());
            let t = e.file_type()?;
            if t.is_dir() {
                if e.file_name() != "target" && e.file_name() != ".git" {
                    todo.push(name);
                }
            } else if t.is_file() {
                out.push(name);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The sha256 of a directory's files: each one's relative path and contents.
pub fn content_hash(dir: &Path) -> anyhow::Result<String> {
    let mut h = Sha256::new();
    for rel in files(dir)? {
        let bytes =
            std::fs::read(dir.join(&rel)).with_context(|| format!("read {}", rel.display()))?;
        h.update(rel.to_string_lossy().as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// What the cache key takes of a patch: the crate, its source and its content.
pub fn key_text(r: &Resolved) -> String {
    let source = match &r.def.source {
        PatchSource::Path { .. } => "path".to_string(),
        PatchSource::Git { url, .. } => format!("git {url}"),
    };
    format!(
        "patch {}={source} commit={} dirty={:?} content={}\n",
        r.krate,
        r.commit.as_deref().unwrap_or("-"),
        r.dirty,
        r.content_sha256.as_deref().unwrap_or("-")
    )
}

/// The directory `[patch.crates-io]` names for the crate: a path as it is; a git source's
/// commit extracted into `dir/patches/<crate>`, then the crate found in it (the repository
/// root or a member directory, as cargo looks for a package in a git repository).
pub fn materialize(r: &Resolved, dir: &Path) -> anyhow::Result<PathBuf> {
    let with_at = |e: anyhow::Error| anyhow::anyhow!("{}: patch {}: {e:#}", r.def.at, r.krate);
    match &r.def.source {
        PatchSource::Path { dir, .. } => Ok(dir.clone()),
        PatchSource::Git { url, .. } => {
            let (Some(repo), Some(commit)) = (&r.repo, &r.commit) else {
                return Err(with_at(anyhow::anyhow!("unresolved source {url}")));
            };
            let dest = dir.join("patches").join(&r.krate);
            let _ = std::fs::remove_dir_all(&dest);
            std::fs::create_dir_all(&dest)?;
            super::output::extract(repo, commit, &dest).map_err(with_at)?;
            find_package(&dest, &r.krate).ok_or_else(|| {
                with_at(anyhow::anyhow!(
                    "{url} at {} has no Cargo.toml of a package named {:?}",
                    &commit[..commit.len().min(12)],
                    r.krate
                ))
            })
        }
    }
}

/// The directory under `root` (itself, or down to three levels, `target` and hidden
/// directories skipped) whose Cargo.toml is the package `name`.
fn find_package(root: &Path, name: &str) -> Option<PathBuf> {
    let mut level = vec![root.to_path_buf()];
    for _ in 0..4 {
        let mut next = Vec::new();
        for d in &level {
            if crate::cargo::package_name(&d.join("Cargo.toml")).is_ok_and(|n| n == name) {
                return Some(d.clone());
            }
            let Ok(rd) = std::fs::read_dir(d) else {
                continue;
            };
            let mut subs: Vec<PathBuf> = rd
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n != "target" && !n.starts_with('.')
                })
                .map(|e| e.path())
                .collect();
            subs.sort();
            next.extend(subs);
        }
        level = next;
    }
    None
}

/// run.json's record of a patch.
pub fn record(r: &Resolved) -> PatchRecord {
    let (source, path, git, rev) = match &r.def.source {
        PatchSource::Path { written, .. } => ("path", Some(written.clone()), None, None),
        PatchSource::Git { url, rev, .. } => ("git", None, Some(url.clone()), Some(rev.clone())),
    };
    PatchRecord {
        source: source.to_string(),
        path,
        git,
        rev,
        commit: r.commit.clone(),
        dirty: r.dirty,
        content_sha256: r.content_sha256.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_outside_git_is_hashed_by_its_files_and_an_edit_changes_the_hash() {
        let d = std::env::temp_dir().join(format!("pingmatrix-patch-hash-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("src")).unwrap();
        std::fs::create_dir_all(d.join("target")).unwrap();
        std::fs::write(d.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
        std::fs::write(d.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        let a = content_hash(&d).unwrap();
        std::fs::write(d.join("target/junk"), "ignored").unwrap();
        assert_eq!(content_hash(&d).unwrap(), a, "target/ is not the source");
        std::fs::write(d.join("src/lib.rs"), "pub fn f() { }\n").unwrap();
        let b = content_hash(&d).unwrap();
        assert_ne!(a, b);
        assert_eq!(find_package(&d, "x"), Some(d.clone()));
        assert_eq!(find_package(&d, "y"), None);
        // The cache key takes the content: an edited path is another build.
        let patches = [(
            "x".to_string(),
            PatchDef {
                source: PatchSource::Path {
                    written: "x".into(),
                    dir: d.clone(),
                },
                at: "m.toml:1:1".into(),
            },
        )]
        .into();
        let before = key_text(&resolve(&patches, &d).unwrap()[0]);
        std::fs::write(d.join("src/lib.rs"), "pub fn f() {  }\n").unwrap();
        let after = resolve(&patches, &d).unwrap();
        assert_ne!(before, key_text(&after[0]));
        assert_eq!(after[0].commit, None, "not in a git repository");
        assert_eq!(record(&after[0]).path.as_deref(), Some("x"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
