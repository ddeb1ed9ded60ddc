//! Provenance: the Nix flake wrapper's and nixpkgs' revisions, and what each binary is —
//! its sha256 and the build stamp in its bytes — checked against the checkout.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::results::schema::{BinaryBuild, Provenance, Source};

pub fn provenance() -> Provenance {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let flake = var("PINGMATRIX_FLAKE_REV");
    let nixpkgs = var("PINGMATRIX_NIXPKGS_REV");
    Provenance {
        via_nix_flake: flake.is_some(),
        note: if flake.is_some() {
            "run through the Nix flake wrapper".into()
        } else {
            "not run through the flake".into()
        },
        flake_rev: flake,
        nixpkgs_rev: nixpkgs,
    }
}

/// Reads every binary (path as recorded) and the stamp in it.
pub fn binary_builds(binaries: &BTreeMap<String, String>) -> BTreeMap<String, BinaryBuild> {
    binaries
        .iter()
        .map(|(name, path)| {
            let bytes = std::fs::read(Path::new(path)).ok();
            let stamp = bytes.as_deref().and_then(pingmatrix_stamp::find);
            let build = BinaryBuild {
                path: path.clone(),
                sha256: bytes.map(|b| format!("{:x}", Sha256::digest(&b))),
                build_commit: stamp.as_ref().map(|s| s.commit.clone()),
                build_dirty: stamp.and_then(|s| s.dirty),
            };
            (name.clone(), build)
        })
        .collect()
}

/// What a binary is expected to have been built from, when not the checkout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A variant: built from its own commit, in a tree of its own.
    Commit(String),
    /// A `command` service: a program the suite did not build, with no stamp to check.
    Foreign,
}

/// Binaries built from another commit than expected (the checkout's, or a variant's own),
/// from a dirty tree, or without a stamp; and a checkout changed since. `origins` names the
/// binaries that are not the checkout's.
pub fn warnings(
    source: &Source,
    builds: &BTreeMap<String, BinaryBuild>,
    origins: &BTreeMap<String, Origin>,
) -> Vec<String> {
    let mut w = Vec::new();
    let short = |c: &str| c[..c.len().min(12)].to_string();
    for (name, b) in builds {
        let (expected, from) = match origins.get(name) {
            Some(Origin::Foreign) => continue,
            Some(Origin::Commit(c)) => (Some(c), "its variant's commit is"),
            None => (source.git_commit.as_ref(), "the checkout is at"),
        };
        match (&b.build_commit, expected) {
            (None, _) if b.sha256.is_none() => w.push(format!("{name}: cannot read {}", b.path)),
            (None, _) => w.push(format!(
                "{name}: no build stamp in {} (not built from this workspace?)",
                b.path
            )),
            (Some(c), _) if c == "unknown" => {
                w.push(format!("{name}: built without git, source commit unknown"))
            }
            (Some(c), Some(s)) if c != s => w.push(format!(
                "{name}: built from commit {}, {from} {}",
                short(c),
                short(s)
            )),
            _ => {}
        }
        if b.build_dirty == Some(true) {
            w.push(format!(
                "{name}: built from a checkout with uncommitted changes"
            ));
        }
    }
    if source.git_dirty == Some(true) {
        w.push(
            "the checkout has uncommitted changes: the binaries may not match any commit".into(),
        );
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(commit: Option<&str>, dirty: Option<bool>) -> BinaryBuild {
        BinaryBuild {
            path: "target/release/x".into(),
            sha256: Some("ab".into()),
            build_commit: commit.map(String::from),
            build_dirty: dirty,
        }
    }

    /// A clean checkout at `commit`.
    fn checkout_at(commit: &str) -> Source {
        Source {
            git_commit: Some(commit.into()),
            git_dirty: Some(false),
            cargo_lock_sha256: None,
            cargo_lock_origin: String::new(),
        }
    }

    #[test]
    fn warns_about_other_commits_dirty_builds_and_missing_stamps() {
        let source = checkout_at("aaaa");
        let builds = BTreeMap::from([
            ("same".to_string(), build(Some("aaaa"), Some(false))),
            ("old".to_string(), build(Some("bbbb"), Some(false))),
            ("dirty".to_string(), build(Some("aaaa"), Some(true))),
            ("foreign".to_string(), build(None, None)),
        ]);
        let w = warnings(&source, &builds, &BTreeMap::new()).join("\n");
        assert!(
            w.contains("old: built from commit bbbb, the checkout is at aaaa"),
            "{w}"
        );
        assert!(
            w.contains("dirty: built from a checkout with uncommitted changes"),
            "{w}"
        );
        assert!(w.contains("foreign: no build stamp"), "{w}");
        assert!(!w.contains("same"), "{w}");
    }

    /// A variant is built from its own commit and a `command` service is no build of ours:
    /// neither is a warning (both were, on every run with variants or a command server).
    #[test]
    fn variants_are_checked_against_their_own_commit_and_command_services_not_at_all() {
        let source = checkout_at("aaaa");
        let builds = BTreeMap::from([
            ("svc@v".to_string(), build(Some("bbbb"), Some(false))),
            ("svc@w".to_string(), build(Some("cccc"), Some(false))),
            ("py".to_string(), build(None, None)),
        ]);
        let origins = BTreeMap::from([
            ("svc@v".to_string(), Origin::Commit("bbbb".into())),
            ("svc@w".to_string(), Origin::Commit("dddd".into())),
            ("py".to_string(), Origin::Foreign),
        ]);
        let w = warnings(&source, &builds, &origins);
        assert_eq!(
            w,
            vec!["svc@w: built from commit cccc, its variant's commit is dddd".to_string()]
        );
    }

    #[test]
    fn finds_the_stamp_and_hash_of_a_real_binary() {
        let me = std::env::current_exe().unwrap();
        let b = binary_builds(&BTreeMap::from([(
            "test".to_string(),
            me.display().to_string(),
        )]));
        assert_eq!(b["test"].sha256.as_ref().map(String::len), Some(64));
    }
}
