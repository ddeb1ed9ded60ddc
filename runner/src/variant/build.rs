//! Building a variant's tree: `cargo build --release --locked --workspace --bin <binary>` in a build
//! directory of the variant's own, the binary copied into the variant's cache directory with
//! its record (`variant.json`), so the next run with the same content finds it.
//!
//! Not one build directory shared by all variants: cargo hashes a path crate by its path
//! within the workspace, so every variant tree's service crate is the same unit there, and
//! its build script (which reads the tree's Cargo.lock for the runtime version the start-up
//! line reports) was not re-run for the next tree — a tokio 1.50.0 variant announced itself
//! as the tokio 1.51.0 built before it.

use std::path::Path;
use std::process::Command;

use sha2::{Digest, Sha256};

use super::output::tail;
use crate::cargo::resolved;
use crate::config::VariantDef;
use crate::results::variants::VariantRecord;

const RECORD: &str = "variant.json";

/// `--workspace`: the services are workspace members but not default members (since
/// `default-members = ["runner"]`), and `--bin` alone looks only in the default members.
fn cargo_args(v: &VariantDef) -> [&str; 6] {
    [
        "build",
        "--release",
        "--locked",
        "--workspace",
        "--bin",
        &v.binary_name,
    ]
}

/// The variant's build directory, inside its cache directory `dir`.
fn target_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("build")
}

/// The build command as run.json records it: the build directory relative to the
/// repository when it is inside it (no machine's paths in committed results).
pub fn command_text(v: &VariantDef, dir: &Path) -> String {
    let target = target_dir(dir);
    let shown = pathdiff::diff_paths(&target, &v.repo)
        .filter(|p| !p.starts_with(".."))
        .unwrap_or(target);
    format!(
        "CARGO_TARGET_DIR={} PINGMATRIX_GIT_COMMIT={} cargo {}",
        shown.display(),
        v.commit,
        cargo_args(v).join(" ")
    )
}

/// A variant built before with the same content (its record and binary are there).
/// Err(why) when the record is there but the binary no longer has the sha256 it records
/// (replaced or damaged since the build): it must be built again, not run under the record.
pub fn cached(dir: &Path, service: &str) -> Result<Option<VariantRecord>, String> {
    let Some(text) = std::fs::read(dir.join(RECORD)).ok() else {
        return Ok(None);
    };
    let Ok(mut r) = serde_json::from_slice::<VariantRecord>(&text) else {
        return Ok(None);
    };
    let Some(bin) = r.binary.as_ref() else {
        return Ok(None);
    };
    if r.error.is_some() || !Path::new(bin).exists() {
        return Ok(None);
    }
    // Re-hashed at every use: the record's hash is the one run.json will carry.
    let now = crate::binaries::sha256_file(Path::new(bin))?;
    if r.binary_sha256.as_deref() != Some(now.as_str()) {
        return Err(format!(
            "{bin} has sha256 {now}, its build record says {}",
            r.binary_sha256.as_deref().unwrap_or("nothing")
        ));
    }
    r.cached = true;
    r.service = service.to_string();
    Ok(Some(r))
}

pub fn build(
    v: &VariantDef,
    service: &str,
    key: &str,
    root: &Path,
    dir: &Path,
    src: &Path,
    patches: &[super::patch::Resolved],
) -> anyhow::Result<VariantRecord> {
    let target = target_dir(dir);
    let args = cargo_args(v);
    // Every runtime's crates (services/services.toml), beside whatever it pins.
    let mut crates: Vec<&str> = crate::catalogue::runtime_crates();
    crates.extend(v.pins.keys().map(String::as_str));
    crates.extend(v.patches.keys().map(String::as_str));
    let lock = std::fs::read(src.join("Cargo.lock")).unwrap_or_default();
    let mut rec = VariantRecord {
        service: service.to_string(),
        base: v.base.clone(),
        variant: v.name.clone(),
        rev: v.rev.clone(),
        commit: v.commit.clone(),
        source_repo: v.repo_from.clone(),
        pins: v
            .pins
            .iter()
            .map(|(k, (ver, _))| (k.clone(), ver.clone()))
            .collect(),
        patches: patches
            .iter()
            .map(|r| (r.krate.clone(), super::patch::record(r)))
            .collect(),
        resolved: resolved(src, &v.binary_name, &crates),
        cargo_lock_sha256: format!("{:x}", Sha256::digest(&lock)),
        cache_key: key.to_string(),
        build_command: command_text(v, dir),
        cached: false,
        binary: None,
        binary_sha256: None,
        error: None,
    };
    // The tree has no .git: the build stamp takes the commit from PINGMATRIX_GIT_COMMIT,
    // and git must not find the enclosing checkout (GIT_CEILING_DIRECTORIES).
    let mut cmd = Command::new("cargo");
    cmd.current_dir(src)
        .args(args)
        .env("CARGO_TARGET_DIR", &target)
        .env("PINGMATRIX_GIT_COMMIT", &v.commit)
        .env("GIT_CEILING_DIRECTORIES", root);
    match super::output::run(cmd)? {
        o if o.status.success() => {}
        o => {
            rec.error = Some(format!(
                "cargo build failed: {}",
                tail(o.stderr.as_bytes(), 6)
            ));
            return Ok(rec);
        }
    }
    let built = target.join("release").join(&v.binary_name);
    let bin_dir = dir.join("bin");
    let dest = bin_dir.join(&v.binary_name);
    let copied = std::fs::create_dir_all(&bin_dir).and_then(|()| std::fs::copy(&built, &dest));
    match copied.and_then(|_| std::fs::read(&dest)) {
        Ok(bytes) => {
            rec.binary_sha256 = Some(format!("{:x}", Sha256::digest(&bytes)));
            rec.binary = Some(dest.display().to_string());
        }
        Err(e) => rec.error = Some(format!("cannot copy {}: {e}", built.display())),
    }
    if rec.error.is_none()
        && let Ok(json) = serde_json::to_vec_pretty(&rec)
    {
        let _ = std::fs::write(dir.join(RECORD), json);
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache directory holding a built variant: its record and its binary.
    fn cache_dir(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let dir = std::env::temp_dir().join(format!(
            "pingmatrix-variant-cache-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        let bin = dir.join("bin").join("ping-x");
        std::fs::write(&bin, b"the binary as built").unwrap();
        let rec = VariantRecord {
            service: "ping-x@v".into(),
            base: "ping-x".into(),
            variant: "v".into(),
            rev: "HEAD".into(),
            commit: "c".repeat(40),
            source_repo: String::new(),
            pins: Default::default(),
            patches: Default::default(),
            resolved: Default::default(),
            cargo_lock_sha256: "00".into(),
            cache_key: "k".into(),
            build_command: "cargo build".into(),
            cached: false,
            binary: Some(bin.display().to_string()),
            binary_sha256: Some(crate::binaries::sha256_file(&bin).unwrap()),
            error: None,
        };
        std::fs::write(dir.join(RECORD), serde_json::to_vec(&rec).unwrap()).unwrap();
        (dir, bin)
    }

    #[test]
    fn a_cached_binary_is_rehashed_and_refused_when_it_changed_since_its_build() {
        let (dir, bin) = cache_dir("rehash");
        let r = cached(&dir, "ping-x@v").unwrap().expect("cached");
        assert!(r.cached);
        assert_eq!(
            r.binary_sha256,
            Some(crate::binaries::sha256_file(&bin).unwrap())
        );
        // Replaced after the build: its record's hash is no longer the binary's.
        std::fs::write(&bin, b"another program").unwrap();
        let why = cached(&dir, "ping-x@v").expect_err("not the recorded binary");
        assert!(why.contains("its build record says"), "{why}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
