//! `[[services.variants]]`: each a name (unique within its service, a valid name part),
//! a `rev` that resolves to a commit of the repository the matrix file is in, and pins of
//! workspace dependencies to versions that look like versions. Whether a pinned version
//! exists and fits the rest of the lock is found by `variant` before the run starts
//! (it needs the registry); the pin's location is kept for that error.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::binaries::Binaries;
use super::names::Names;
use super::{Errs, line_col};
use crate::config::schema::{PatchSpec, Variant};
use crate::config::{PatchDef, PatchSource, ServiceDef, VariantDef};

/// A pingmatrix checkout: the services' list is where variants' builds find it.
fn is_pingmatrix(repo: &Path) -> bool {
    repo.join("services").join("services.toml").is_file()
}

/// Where a variant is built from, and how run.json names that: the `repo` key (relative to
/// the matrix file), else the matrix file's checkout when it is pingmatrix's, else the
/// checkout `matrix` was built in (a matrix file kept with a crate, outside pingmatrix).
/// Err: why there is none, with what to do.
fn source_repo(base: &Path, repo_key: Option<&str>) -> Result<(PathBuf, String), String> {
    if let Some(r) = repo_key {
        let dir = base.join(r);
        return match repo_of(&dir) {
            Some(top) if is_pingmatrix(&top) => Ok((top, format!("repo = {r:?}"))),
            Some(top) => Err(format!(
                "{} is a git checkout but not pingmatrix's (it has no services/services.toml)",
                top.display()
            )),
            None => Err(format!("{} is not a git checkout", dir.display())),
        };
    }
    if let Some(top) = repo_of(base).filter(|t| is_pingmatrix(t)) {
        return Ok((top, "the matrix file's checkout".into()));
    }
    match crate::config::home_checkout() {
        Some(top) => Ok((top, "the checkout matrix was built in".into())),
        None => Err(
            "the matrix file is not in a pingmatrix checkout and this matrix was not built in \
             one, so there is no source to build the variant from: give `repo = \"<path to a \
             pingmatrix checkout>\"`"
                .into(),
        ),
    }
}

/// The checkout that holds `dir`, if any.
fn repo_of(dir: &Path) -> Option<PathBuf> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    git(dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(args);
    match crate::process::output_within(cmd, std::time::Duration::from_secs(10)) {
        Ok((st, out)) if st.success() => Some(out.trim().to_string()),
        _ => None,
    }
}

/// A version as cargo's `--precise` takes it: digits and dots, an optional pre-release.
fn is_version(v: &str) -> bool {
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

fn is_crate_name(n: &str) -> bool {
    !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

pub(super) fn check(
    errs: &mut Errs,
    base: &ServiceDef,
    binary_name: &str,
    variants: &[Variant],
    i: usize,
    binaries: &Binaries,
) -> Vec<ServiceDef> {
    if variants.is_empty() {
        return Vec::new();
    }
    // A service given by path builds as the binary that path names (cargo's `--bin` takes a
    // target name, not a path).
    let binary_name = std::path::Path::new(binary_name)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(binary_name);
    let mut names = Names::default();
    let mut out = Vec::new();
    for (j, v) in variants.iter().enumerate() {
        let field = |f: &str| format!("services[{i}].variants[{j}].{f}");
        let name = names.add(errs, &v.name, field("name"));
        if let Some(args) = &v.args {
            super::burn::check(errs, v.name.span(), &field("args"), args);
        }
        let rev = v.rev.as_ref().map_or("HEAD", |r| r.get_ref().as_str());
        let rev_span = v.rev.as_ref().map_or(v.name.span(), |r| r.span());
        let (repo, repo_from) =
            match source_repo(binaries.base, v.repo.as_ref().map(|r| r.get_ref().as_str())) {
                Ok((r, from)) => (Some(r), from),
                Err(why) => {
                    let (span, f) = match &v.repo {
                        Some(r) => (r.span(), field("repo")),
                        None => (rev_span.clone(), field("rev")),
                    };
                    errs.at(span, f, format!("variant {name:?}: {why}"));
                    (None, String::new())
                }
            };
        let commit = match &repo {
            None => None,
            Some(_) if rev.starts_with('-') || rev.chars().any(char::is_whitespace) => {
                errs.at(
                    rev_span.clone(),
                    field("rev"),
                    format!("{rev:?} is not a revision"),
                );
                None
            }
            Some(r) => match git(
                r,
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &format!("{rev}^{{commit}}"),
                ],
            ) {
                Some(c) => Some(c),
                None => {
                    errs.at(
                        rev_span.clone(),
                        field("rev"),
                        format!("revision {rev:?} does not exist in {}", r.display()),
                    );
                    None
                }
            },
        };
        let mut pins = std::collections::BTreeMap::new();
        for (krate, version) in &v.pin {
            let at = version.span();
            if !is_crate_name(krate) {
                errs.at(
                    at.clone(),
                    field("pin"),
                    format!("{krate:?} is not a crate name"),
                );
            } else if !is_version(version.get_ref()) {
                errs.at(
                    at.clone(),
                    field(&format!("pin.{krate}")),
                    format!(
                        "{:?} is not an exact version (e.g. \"1.51.0\")",
                        version.get_ref()
                    ),
                );
            }
            let (line, col) = line_col(errs.text, at.start);
            pins.insert(
                krate.clone(),
                (
                    version.get_ref().clone(),
                    format!("{}:{line}:{col}", errs.file),
                ),
            );
        }
        let lock = match (&repo, &commit) {
            (Some(r), Some(c)) if !v.patch.is_empty() => {
                git(r, &["show", &format!("{c}:Cargo.lock")])
            }
            _ => None,
        };
        let ctx = PatchCtx {
            base: binaries.base,
            package: binary_name,
            lock: lock.as_deref(),
            commit: commit.as_deref(),
        };
        let mut patches = std::collections::BTreeMap::new();
        for (krate, spec) in &v.patch {
            let f = field(&format!("patch.{krate}"));
            if let Some(p) = patch(errs, &f, krate, spec, &ctx) {
                if let Some(version) = v.pin.get(krate) {
                    errs.at(
                        spec.span(),
                        f.clone(),
                        format!(
                            "{krate} is both pinned (to {:?}) and patched: a crate comes from one \
                             source, so give one of them",
                            version.get_ref()
                        ),
                    );
                }
                patches.insert(krate.clone(), p);
            }
        }
        let full = format!("{}@{name}", base.name);
        out.push(ServiceDef {
            name: full.clone(),
            binary: super::binaries::unbuilt(&full),
            args: v.args.clone().unwrap_or_else(|| base.args.clone()),
            external: false,
            variant: Some(VariantDef {
                base: base.name.clone(),
                name,
                binary_name: binary_name.to_string(),
                rev: rev.to_string(),
                commit: commit.unwrap_or_default(),
                repo: repo.clone().unwrap_or_default(),
                repo_from,
                pins,
                patches,
            }),
            unavailable: None,
        });
    }
    out
}

/// What a patch is checked against: the matrix file's directory (relative paths), the
/// package whose dependencies it may replace and the variant's Cargo.lock at its commit.
struct PatchCtx<'a> {
    base: &'a Path,
    package: &'a str,
    lock: Option<&'a str>,
    commit: Option<&'a str>,
}

fn relative_to(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

/// Why a `git` source is not one git may be given (None: it may). It reaches `git fetch` as
/// an argument, so an option (`--upload-pack=<cmd>`) or a remote helper that runs a command
/// (`ext::<cmd>`, `fd::`) would run code before anything builds.
fn url_problem(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        Some("it is empty")
    } else if url.starts_with('-') {
        Some("it starts with `-`, which git would take as an option")
    } else if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("it has whitespace or control characters")
    } else if url
        .split_once("::")
        .is_some_and(|(helper, _)| !helper.contains('/'))
    {
        Some("a remote helper (`<transport>::<address>`) is not taken; give a URL or a path")
    } else {
        None
    }
}

/// A git source on this machine: a `file://` URL or a path (relative to the matrix file);
/// None for a URL of another host (`https://…`, `ssh://…`, `user@host:path`).
fn local_repo(base: &Path, url: &str) -> Option<PathBuf> {
    if let Some(p) = url.strip_prefix("file://") {
        return Some(PathBuf::from(p));
    }
    let scp_like = url
        .split_once(':')
        .is_some_and(|(host, _)| !host.contains('/') && host.len() > 1);
    if url.contains("://") || scp_like {
        return None;
    }
    Some(relative_to(base, url))
}

/// One `patch.<crate>` entry: the source's shape, that the variant's tree depends on the
/// crate, and that the source exists (a path with the crate's Cargo.toml; a local git
/// repository with the revision).
fn patch(
    errs: &mut Errs,
    f: &str,
    krate: &str,
    spec: &toml::Spanned<PatchSpec>,
    ctx: &PatchCtx,
) -> Option<PatchDef> {
    let span = spec.span();
    let (line, col) = line_col(errs.text, span.start);
    let at = format!("{}:{line}:{col}", errs.file);
    let s = spec.get_ref();
    if !is_crate_name(krate) {
        errs.at(span, f, format!("{krate:?} is not a crate name"));
        return None;
    }
    if let (Some(lock), Some(commit)) = (ctx.lock, ctx.commit)
        && !crate::cargo::depends_on(lock, ctx.package, krate)
    {
        errs.at(
            span.clone(),
            f,
            format!(
                "{} does not depend on {krate} at {} (it is not among the crates its Cargo.lock \
                 links into it), so there is nothing to patch",
                ctx.package,
                &commit[..commit.len().min(12)]
            ),
        );
        return None;
    }
    let source = match (&s.path, &s.git, &s.rev) {
        (Some(p), None, None) => {
            let dir = relative_to(ctx.base, p.get_ref());
            let manifest = dir.join("Cargo.toml");
            if !dir.is_dir() {
                errs.at(
                    p.span(),
                    format!("{f}.path"),
                    format!("{:?} is not a directory ({})", p.get_ref(), dir.display()),
                );
                return None;
            }
            match crate::cargo::package_name(&manifest) {
                Ok(name) if name == krate => {}
                Ok(name) => {
                    errs.at(
                        p.span(),
                        format!("{f}.path"),
                        format!(
                            "{} is the package {name:?}, not {krate:?}",
                            manifest.display()
                        ),
                    );
                    return None;
                }
                Err(e) => {
                    errs.at(
                        p.span(),
                        format!("{f}.path"),
                        format!("no Cargo.toml of the crate {krate:?} there: {e}"),
                    );
                    return None;
                }
            }
            PatchSource::Path {
                written: p.get_ref().clone(),
                dir: dir.canonicalize().unwrap_or(dir),
            }
        }
        (None, Some(g), Some(r)) => {
            let (url, rev) = (g.get_ref(), r.get_ref());
            if let Some(why) = url_problem(url) {
                errs.at(
                    g.span(),
                    format!("{f}.git"),
                    format!("{url:?} is not a git URL: {why}"),
                );
                return None;
            }
            if rev.is_empty() || rev.starts_with('-') || rev.chars().any(char::is_whitespace) {
                errs.at(
                    r.span(),
                    format!("{f}.rev"),
                    format!("{rev:?} is not a revision"),
                );
                return None;
            }
            let local = local_repo(ctx.base, url);
            let commit = match &local {
                None => None,
                Some(l) if git(l, &["rev-parse", "--git-dir"]).is_none() => {
                    errs.at(
                        g.span(),
                        format!("{f}.git"),
                        format!("{url:?} is not a git repository ({})", l.display()),
                    );
                    return None;
                }
                Some(l) => match git(
                    l,
                    &[
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        "--end-of-options",
                        &format!("{rev}^{{commit}}"),
                    ],
                ) {
                    Some(c) => Some(c),
                    None => {
                        errs.at(
                            r.span(),
                            format!("{f}.rev"),
                            format!("revision {rev:?} does not exist in {url}"),
                        );
                        return None;
                    }
                },
            };
            PatchSource::Git {
                url: url.clone(),
                local,
                rev: rev.clone(),
                commit,
            }
        }
        (None, Some(_), None) => {
            errs.at(
                span,
                f,
                "a `git` source needs a `rev` (a commit, tag or branch)",
            );
            return None;
        }
        (Some(_), None, Some(_)) => {
            errs.at(span, f, "`rev` goes with `git`, not with `path`");
            return None;
        }
        (Some(_), Some(_), _) => {
            errs.at(span, f, "give `path` or `git`, not both");
            return None;
        }
        (None, None, _) => {
            errs.at(
                span,
                f,
                "give the source: `path = \"<dir>\"` or `git = \"<url>\", rev = \"<rev>\"`",
            );
            return None;
        }
    };
    Some(PatchDef { source, at })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_crate_names() {
        assert!(is_version("1.51.0") && is_version("0.1.0-alpha.1"));
        assert!(!is_version("1.51") && !is_version("^1.51.0") && !is_version("latest"));
        assert!(is_crate_name("hyper-util") && !is_crate_name("a b"));
    }

    #[test]
    fn a_git_url_git_would_take_as_an_option_or_a_command_is_refused() {
        for bad in [
            "--upload-pack=touch /tmp/x #://x",
            "-uimmediate",
            "ext::sh -c touch% /tmp/x",
            "fd::0",
            "https://h/x y",
            "",
        ] {
            assert!(url_problem(bad).is_some(), "{bad:?}");
        }
        for good in [
            "https://github.com/seanmonstar/httparse",
            "file:///src/h",
            "../h",
            "git@github.com:x/y.git",
            "ssh://git@h/x::y",
        ] {
            assert_eq!(url_problem(good), None, "{good:?}");
        }
    }

    #[test]
    fn git_sources_on_this_machine_and_elsewhere() {
        let base = Path::new("/m");
        assert_eq!(
            local_repo(base, "file:///src/h"),
            Some(PathBuf::from("/src/h"))
        );
        assert_eq!(local_repo(base, "../h"), Some(PathBuf::from("/m/../h")));
        assert_eq!(local_repo(base, "https://github.com/x/y"), None);
        assert_eq!(local_repo(base, "git@github.com:x/y.git"), None);
    }
}

#[cfg(test)]
mod source_tests {
    use super::*;

    #[test]
    fn a_matrix_file_outside_pingmatrix_builds_from_the_checkout_matrix_was_built_in() {
        let outside = std::env::temp_dir();
        let (repo, from) = source_repo(&outside, None).unwrap();
        assert!(is_pingmatrix(&repo), "{}", repo.display());
        assert_eq!(from, "the checkout matrix was built in");
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(
            source_repo(here, None).unwrap().1,
            "the matrix file's checkout"
        );
        assert_eq!(
            source_repo(&outside, Some(here.to_str().unwrap()))
                .unwrap()
                .0,
            repo
        );
        assert!(source_repo(here, Some("no/such/dir")).is_err());
    }
}
