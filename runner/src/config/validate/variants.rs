//! `[[services.variants]]`: each a name (unique within its service, a valid name part),
//! a `rev` that resolves to a commit of the repository the matrix file is in, and pins of
//! workspace dependencies to versions that look like versions. Whether a pinned version
//! exists and fits the rest of the lock is found by `crate::variant` before the run starts
//! (it needs the registry); the pin's location is kept for that error.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::binaries::Binaries;
use super::names::Names;
use super::{Errs, line_col};
use crate::config::schema::Variant;
use crate::config::{ServiceDef, VariantDef};

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
    let repo = repo_of(binaries.base);
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
        let commit = match &repo {
            None => {
                errs.at(
                    rev_span.clone(),
                    field("rev"),
                    format!(
                        "the matrix file is not in a git checkout, so there is no source to \
                         build variant {name:?} from"
                    ),
                );
                None
            }
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
                pins,
            }),
            unavailable: None,
        });
    }
    out
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
}
