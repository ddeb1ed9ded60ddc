//! Service variants: the same service built from another revision of this repository or
//! with pinned dependency versions, run as `<service>@<variant>` beside the others and
//! interleaved like any service. Before the run starts, `prepare` gives every variant its
//! own source tree (`source`: the revision's files, pins written into its own Cargo.toml
//! and resolved into its own Cargo.lock), builds it (`build`) and caches the binary by
//! content under `target/variants/<key>/`, and returns what run.json records of each.
//!
//! A pin that does not resolve is bad input (the run does not start, exit 2, naming the
//! pin's file:line:col and cargo's reason); a build that fails makes the variant's cells
//! fail with cargo's error, and the run goes on.

mod build;
pub mod cache;
mod output;

pub use output::Interrupted;
mod patch;
mod source;

use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::config::{Matrix, VariantDef};
use crate::results::variants::VariantRecord;

/// Where variant trees and the shared build directory live: `PINGMATRIX_VARIANTS_DIR`, or
/// `target/variants` of the repository.
pub fn cache_root(repo: &Path) -> PathBuf {
    std::env::var_os("PINGMATRIX_VARIANTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target").join("variants"))
}

/// The content the build depends on: the commit, the binary, the pins, the patches' sources
/// and their content, the compiler and the profile. Two variants with the same key are the
/// same binary.
pub(crate) fn cache_key(v: &VariantDef, patches: &[patch::Resolved], rustc: &str) -> String {
    let mut h = Sha256::new();
    h.update(format!("commit={}\nbinary={}\n", v.commit, v.binary_name));
    for (k, (ver, _)) in &v.pins {
        h.update(format!("pin {k}={ver}\n"));
    }
    for r in patches {
        h.update(patch::key_text(r));
    }
    // layout: binaries built in the shared build directory may carry another variant's
    // runtime version in their start-up line (build.rs), so they are not reused.
    h.update(format!(
        "rustc={rustc}\nprofile=release\nlayout=own-build-dir\n"
    ));
    format!("{:x}", h.finalize())[..16].to_string()
}

/// Builds (or finds cached) every variant of `m` that `needed` names (the plan's services),
/// pointing each variant service at its binary or marking it unavailable with the build's
/// error. Err: a pin did not resolve.
pub fn prepare(
    m: &mut Matrix,
    needed: &std::collections::BTreeSet<String>,
    note: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<VariantRecord>> {
    let rustc = crate::env::toolchain::toolchain()
        .rustc_runtime
        .unwrap_or_else(|| "unknown".into());
    // First every variant's source: its patches resolved, its tree prepared (pins and
    // patches resolved into its lock), so bad input stops the run before anything builds.
    let mut ready = Vec::new();
    // Keys already taken by an earlier variant of this run: two variants spelling the same
    // content (a git source as `file:///x` and as `/x`) are one build, made once.
    let mut keys = std::collections::BTreeSet::new();
    for (i, s) in m.services.iter().enumerate() {
        let Some(v) = s.variant.clone().filter(|_| needed.contains(&s.name)) else {
            continue;
        };
        let root = cache_root(&v.repo);
        let patches = patch::resolve(&v.patches, &root)?;
        let key = cache_key(&v, &patches, &rustc);
        let dir = root.join(&key);
        if !keys.insert(key.clone()) {
            ready.push((i, v, patches, root, key, dir, Err(None)));
            continue;
        }
        // A cached build whose binary no longer has its recorded hash is not used.
        let cached = build::cached(&dir, &s.name).unwrap_or_else(|why| {
            note(&format!("variant {}: cached build not used: {why}", s.name));
            None
        });
        let tree = match cached {
            Some(r) => Err(Some(r)),
            None => {
                note(&format!(
                    "variant {}: preparing {} at {}{} …",
                    s.name,
                    v.binary_name,
                    &v.commit[..v.commit.len().min(12)],
                    pins_text(&v, &patches)
                ));
                Ok(source::prepare(&v, &dir, &patches)?)
            }
        };
        ready.push((i, v, patches, root, key, dir, tree));
    }
    let mut records: Vec<VariantRecord> = Vec::new();
    for (i, v, patches, root, key, dir, tree) in ready {
        // The binary of the variant that first had this key, where it was put (absolute).
        let first_binary = records
            .iter()
            .find(|r| r.cache_key == key)
            .and_then(|r| m.services.iter().find(|x| x.name == r.service))
            .filter(|x| x.unavailable.is_none())
            .map(|x| x.binary.display().to_string());
        let s = &mut m.services[i];
        let rec = match tree {
            Err(Some(r)) => {
                note(&format!("variant {}: cached ({})", s.name, dir.display()));
                r
            }
            // The same content as a variant before it in this run: its build, reused.
            Err(None) => {
                let first = records
                    .iter()
                    .find(|r| r.cache_key == key)
                    .context("a repeated cache key without its first build")?;
                note(&format!(
                    "variant {}: the same build as {} (cache key {key})",
                    s.name, first.service
                ));
                let mut r = first.clone();
                r.service = s.name.clone();
                r.variant = v.name.clone();
                r.rev = v.rev.clone();
                r.pins = v
                    .pins
                    .iter()
                    .map(|(k, (ver, _))| (k.clone(), ver.clone()))
                    .collect();
                r.patches = patches
                    .iter()
                    .map(|p| (p.krate.clone(), patch::record(p)))
                    .collect();
                r.cached = true;
                r.binary = first_binary;
                r
            }
            Ok(tree) => {
                let r = build::build(&v, &s.name, &key, &root, &dir, &tree, &patches)?;
                match &r.error {
                    Some(e) => note(&format!("variant {}: build failed: {e}", s.name)),
                    None => note(&format!("variant {}: built", s.name)),
                }
                r
            }
        };
        let mut rec = rec;
        // Recomputed, not taken from the cache: it names the build directory relative to
        // the repository.
        rec.build_command = build::command_text(&v, &dir);
        rec.source_repo = v.repo_from.clone();
        match (&rec.binary, &rec.error) {
            (Some(b), None) => {
                s.binary = PathBuf::from(b);
                // run.json names it as it names every binary: relative to where `matrix` ran.
                rec.binary = Some(crate::binaries::display_path(&s.binary));
            }
            (_, e) => {
                s.unavailable = Some(format!(
                    "variant {} could not be built: {}",
                    s.name,
                    e.as_deref().unwrap_or("no binary")
                ))
            }
        }
        records.push(rec);
    }
    Ok(records)
}

fn pins_text(v: &VariantDef, patches: &[patch::Resolved]) -> String {
    let pins = v.pins.iter().map(|(k, (ver, _))| format!(", {k} = {ver}"));
    let patches = patches.iter().map(|r| {
        let c = r.commit.as_deref().unwrap_or("no commit");
        format!(
            ", {} from {} {}",
            r.krate,
            source_text(&r.def),
            &c[..c.len().min(12)]
        )
    });
    pins.chain(patches).collect()
}

/// A patch's source as the matrix file gives it.
fn source_text(d: &crate::config::PatchDef) -> String {
    match &d.source {
        crate::config::PatchSource::Path { written, .. } => written.clone(),
        crate::config::PatchSource::Git { url, rev, .. } => format!("{url} @ {rev}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(commit: &str, pins: &[(&str, &str)]) -> VariantDef {
        VariantDef {
            base: "ping-tokio-hyper".into(),
            name: "v".into(),
            binary_name: "ping-tokio-hyper".into(),
            rev: "HEAD".into(),
            commit: commit.into(),
            repo: PathBuf::from("."),
            repo_from: String::new(),
            pins: pins
                .iter()
                .map(|(k, v)| (k.to_string(), (v.to_string(), "m.toml:1:1".to_string())))
                .collect(),
            patches: Default::default(),
        }
    }

    #[test]
    fn the_cache_key_is_the_content_not_the_name() {
        let a = def("abc", &[("tokio", "1.51.0")]);
        let mut renamed = a.clone();
        renamed.name = "other".into();
        renamed.pins.get_mut("tokio").unwrap().1 = "elsewhere:9:9".into();
        assert_eq!(
            cache_key(&a, &[], "rustc 1.95.0"),
            cache_key(&renamed, &[], "rustc 1.95.0")
        );
        assert_ne!(
            cache_key(&a, &[], "rustc 1.95.0"),
            cache_key(&def("abc", &[]), &[], "rustc 1.95.0")
        );
        assert_ne!(
            cache_key(&a, &[], "rustc 1.95.0"),
            cache_key(&def("abd", &[("tokio", "1.51.0")]), &[], "rustc 1.95.0")
        );
        assert_ne!(
            cache_key(&a, &[], "rustc 1.95.0"),
            cache_key(&a, &[], "rustc 1.96.0")
        );
    }
}
