//! A variant's dependency sources (`patch`): where each patched crate comes from, resolved
//! before anything builds — a path's git commit, dirty flag and content hash (of the crate,
//! its path dependencies and its workspace manifest: everything its build reads); a git
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
                r.dirty = dirty(dir);
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

/// Files of a directory the build reads, relative and sorted: every file but those under a
/// `target/` or `.git/` directory. Not what git lists: a source in a git-ignored directory is
/// built all the same, and an edit to it must rebuild.
fn files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
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

/// How many directories (the crate and its path dependencies, transitively) a path source
/// may bring in: a bound on a manifest graph read from the user's files.
const MAX_SOURCE_DIRS: usize = 256;

/// What a path source's build reads beyond its own directory: its path dependencies, each by
/// package name with its directory, transitively (tokio → ../tokio-macros, axum →
/// ../axum-core), and the workspace manifest it inherits from, if any.
#[derive(Debug, Default)]
struct Sources {
    /// (package name, directory), the crate first, then its path dependencies sorted.
    dirs: Vec<(String, PathBuf)>,
    /// The nearest enclosing `[workspace]` manifest of any of them.
    workspace_manifests: Vec<PathBuf>,
}

/// The `path` of every dependency a manifest declares (every dependency table, target ones
/// included; a `workspace = true` entry through the workspace's `[workspace.dependencies]`),
/// as directories.
fn path_deps(
    dir: &Path,
    workspace: Option<&(PathBuf, toml::Table)>,
) -> anyhow::Result<Vec<PathBuf>> {
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("read {}", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", manifest.display()))?;
    let kinds = ["dependencies", "build-dependencies", "dev-dependencies"];
    let mut tables: Vec<&toml::Table> = kinds
        .iter()
        .filter_map(|k| doc.get(*k).and_then(toml::Value::as_table))
        .collect();
    if let Some(targets) = doc.get("target").and_then(toml::Value::as_table) {
        for t in targets.values().filter_map(toml::Value::as_table) {
            tables.extend(
                kinds
                    .iter()
                    .filter_map(|k| t.get(*k).and_then(toml::Value::as_table)),
            );
        }
    }
    let inherited = |name: &str| {
        let (root, ws) = workspace?;
        let p = ws
            .get("workspace")?
            .get("dependencies")?
            .get(name)?
            .get("path")?
            .as_str()?;
        Some(root.join(p))
    };
    let mut out = Vec::new();
    for t in tables {
        for (name, spec) in t {
            if let Some(p) = spec.get("path").and_then(toml::Value::as_str) {
                out.push(dir.join(p));
            } else if spec.get("workspace").and_then(toml::Value::as_bool) == Some(true)
                && let Some(p) = inherited(
                    spec.get("package")
                        .and_then(toml::Value::as_str)
                        .unwrap_or(name),
                )
            {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// The nearest directory above `dir` whose Cargo.toml has a `[workspace]`, with that manifest.
fn workspace_of(dir: &Path) -> Option<(PathBuf, toml::Table)> {
    dir.ancestors().skip(1).find_map(|d| {
        let text = std::fs::read_to_string(d.join("Cargo.toml")).ok()?;
        let doc: toml::Table = toml::from_str(&text).ok()?;
        doc.contains_key("workspace")
            .then(|| (d.to_path_buf(), doc))
    })
}

/// The crate at `dir` and every directory its build reads (see [`Sources`]).
fn sources(dir: &Path) -> anyhow::Result<Sources> {
    let mut s = Sources::default();
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let root = seen.is_empty();
        // A path dependency that is not there has nothing to hash (cargo fails on it when it
        // needs it); the crate itself must be.
        let d = match d.canonicalize() {
            Ok(d) => d,
            Err(_) if !root => continue,
            Err(e) => return Err(e).with_context(|| format!("read {}", d.display())),
        };
        if !seen.insert(d.clone()) {
            continue;
        }
        anyhow::ensure!(
            seen.len() <= MAX_SOURCE_DIRS,
            "more than {MAX_SOURCE_DIRS} path dependencies under {}",
            dir.display()
        );
        let ws = workspace_of(&d);
        if let Some((root, _)) = &ws {
            let m = root.join("Cargo.toml");
            if !s.workspace_manifests.contains(&m) {
                s.workspace_manifests.push(m);
            }
        }
        let manifest = d.join("Cargo.toml");
        let (name, deps) = match crate::cargo::package_name(&manifest) {
            Ok(name) => (name, path_deps(&d, ws.as_ref())?),
            Err(e) if root => return Err(e),
            // Not a package (a directory a manifest names wrongly): its files, by its name.
            Err(_) => (
                d.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
                vec![],
            ),
        };
        todo.extend(deps);
        s.dirs.push((name, d));
    }
    // The crate first (it was taken first), the rest in a stable order.
    s.dirs[1..].sort();
    s.workspace_manifests.sort();
    Ok(s)
}

/// The sha256 of what a path source's build reads: each directory's files (its package name,
/// each file's relative path and contents) — the crate's own, then its path dependencies' —
/// and the workspace manifests they inherit from.
pub fn content_hash(dir: &Path) -> anyhow::Result<String> {
    let s = sources(dir)?;
    let mut h = Sha256::new();
    for (i, (name, d)) in s.dirs.iter().enumerate() {
        if i > 0 {
            h.update(b"\0path dependency\0");
            h.update(name.as_bytes());
            h.update([0]);
        }
        for rel in files(d)? {
            let bytes =
                std::fs::read(d.join(&rel)).with_context(|| format!("read {}", rel.display()))?;
            h.update(rel.to_string_lossy().as_bytes());
            h.update([0]);
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(&bytes);
        }
    }
    for m in &s.workspace_manifests {
        h.update(b"\0workspace manifest\0");
        h.update(&std::fs::read(m).with_context(|| format!("read {}", m.display()))?);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// Whether a path source's build differs from its git commit: a change git sees in the crate
/// or a path dependency, or a file in a git-ignored directory the build reads (not in the
/// commit at all). `target/` and a library's ignored Cargo.lock are not the build's input.
fn dirty(dir: &Path) -> Option<bool> {
    let s = sources(dir).ok()?;
    let mut any = false;
    for (_, d) in &s.dirs {
        let Some(status) = git_out(
            d,
            &[
                "status",
                "--porcelain",
                "--untracked-files=normal",
                "--",
                ".",
            ],
        ) else {
            continue;
        };
        let ignored = git_out(
            d,
            &[
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                // An ignored directory as one entry (target/ would list every file).
                "--directory",
                "--no-empty-directory",
                "--",
                ".",
            ],
        )
        .unwrap_or_default();
        let builds = ignored.split('\0').filter(|p| !p.is_empty()).any(|p| {
            let p = Path::new(p.trim_end_matches('/'));
            p != Path::new("Cargo.lock")
                && !p
                    .components()
                    .any(|c| c.as_os_str() == "target" || c.as_os_str() == ".git")
        });
        any |= !status.is_empty() || builds;
    }
    Some(any)
}

/// What the cache key takes of a patch: the crate, the kind of source and its content —
/// never how the source was spelled. A git commit is its content, wherever it was read from:
/// `git = "file:///x"`, `git = "/x"` and a remote URL of the same commit build once.
pub fn key_text(r: &Resolved) -> String {
    let source = match &r.def.source {
        PatchSource::Path { .. } => "path",
        PatchSource::Git { .. } => "git",
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

    /// Issue 47 item 9: the key missed edits the build uses — a path dependency beside the
    /// crate (tokio → ../tokio-macros), one inherited through `[workspace.dependencies]`, and
    /// a source in a git-ignored directory — so the old binary was measured as "cached", with
    /// `dirty: false`.
    #[test]
    fn path_dependencies_and_git_ignored_sources_are_in_the_key_and_dirty() {
        let ws = std::env::temp_dir().join(format!("pingmatrix-patch-deps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&ws);
        let write = |rel: &str, text: &str| {
            let p = ws.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"outer\", \"helper\", \"inner\"]\n\
             [workspace.dependencies]\ninner = { path = \"inner\" }\n",
        );
        write(
            "outer/Cargo.toml",
            "[package]\nname = \"outer\"\n[dependencies]\nhelper = { path = \"../helper\" }\n\
             inner = { workspace = true }\n",
        );
        write("outer/src/lib.rs", "pub fn f() {}\n");
        write("helper/Cargo.toml", "[package]\nname = \"helper\"\n");
        write("helper/src/lib.rs", "pub fn h() {}\n");
        write("inner/Cargo.toml", "[package]\nname = \"inner\"\n");
        write("inner/src/lib.rs", "pub fn i() {}\n");
        write(".gitignore", "gen/\ntarget/\n");
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(&ws)
                .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
                .args(["-c", "commit.gpgsign=false"])
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "x"]);
        let outer = ws.join("outer");
        // What run.json records: resolve's dirty flag.
        let dirty = |d: &Path| {
            let patches = [(
                "outer".to_string(),
                PatchDef {
                    source: PatchSource::Path {
                        written: "outer".into(),
                        dir: d.to_path_buf(),
                    },
                    at: "m.toml:1:1".into(),
                },
            )]
            .into();
            resolve(&patches, d).unwrap()[0].dirty
        };
        assert_eq!(dirty(&outer), Some(false));
        let mut seen = vec![content_hash(&outer).unwrap()];
        let mut changed = |rel: &str, text: &str| {
            write(rel, text);
            let h = content_hash(&outer).unwrap();
            let new = !seen.contains(&h);
            seen.push(h);
            new
        };
        assert!(
            changed("helper/src/lib.rs", "pub fn h() { }\n"),
            "a path dependency"
        );
        assert!(
            changed("inner/src/lib.rs", "pub fn i() { }\n"),
            "a workspace one"
        );
        assert!(
            changed("outer/gen/x.rs", "pub fn g() {}\n"),
            "a git-ignored source"
        );
        assert!(changed(
            "Cargo.toml",
            "# edited\n[workspace]\n[workspace.dependencies]\ninner = { path = \"inner\" }\n"
        ));
        assert!(
            !changed("outer/target/debug/junk", "built"),
            "target/ is not a source"
        );
        assert_eq!(dirty(&outer), Some(true));
        git(&["add", "-A", "-f", "outer/gen"]);
        git(&["commit", "-q", "-am", "y"]);
        assert_eq!(dirty(&outer), Some(false), "target/ does not make it dirty");
        write("outer/gen2/y.rs", "");
        std::fs::write(ws.join(".gitignore"), "gen/\ngen2/\ntarget/\n").unwrap();
        git(&["commit", "-q", "-am", "z"]);
        assert_eq!(
            dirty(&outer),
            Some(true),
            "a file in an ignored directory is not in the commit"
        );
        std::fs::remove_dir_all(&ws).unwrap();
    }

    /// F10: the same commit given as `file:///x` and as `/x` is one build.
    #[test]
    fn a_git_source_is_keyed_on_its_commit_not_its_spelling() {
        let git = |url: &str, commit: &str| Resolved {
            krate: "httparse".into(),
            def: PatchDef {
                source: PatchSource::Git {
                    url: url.into(),
                    local: Some(PathBuf::from("/x")),
                    rev: "v1".into(),
                    commit: None,
                },
                at: "m.toml:1:1".into(),
            },
            commit: Some(commit.into()),
            dirty: None,
            content_sha256: None,
            repo: Some(PathBuf::from("/x")),
        };
        let c = "1a4f94e".repeat(5);
        assert_eq!(
            key_text(&git("file:///x", &c)),
            key_text(&git("/x", &c)),
            "one commit, two spellings"
        );
        assert_eq!(
            key_text(&git("https://example.invalid/x", &c)),
            key_text(&git("/x", &c))
        );
        assert_ne!(
            key_text(&git("/x", &c)),
            key_text(&git("/x", &"19b5fc7".repeat(5)))
        );
    }

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
