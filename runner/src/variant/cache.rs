//! `matrix variants list` and `matrix variants prune`: what the variant cache
//! (`target/variants/`, or `PINGMATRIX_VARIANTS_DIR`) holds and the space it takes.
//!
//! An entry `<key>/` holds the variant's source tree (`src/`, `patches/`), its build
//! directory (`build/`, most of the space: ~200 MB for a service) and, once built, its binary
//! (`bin/`) and record (`variant.json`). A later run reuses an entry by its record and binary
//! alone, so `prune` removes the rest of every built entry and it stays reusable; `--all`
//! removes whole entries, incomplete ones (a failed or interrupted build, or one in progress)
//! and the git mirrors (`git/`) too.

use std::path::{Path, PathBuf};

use crate::results::untrusted::visible;
use crate::results::variants::VariantRecord;

/// What a built entry keeps through `prune`: what a later run reuses it by.
const KEPT: [&str; 2] = ["bin", "variant.json"];

/// One directory under the cache root.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub bytes: u64,
    /// The record of a complete build (its binary there): reusable.
    pub record: Option<VariantRecord>,
    /// `git/`: the mirrors of remote sources.
    pub mirrors: bool,
}

/// Bytes of the files under `p` (symbolic links not followed: a path source is not ours).
pub fn size(p: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    std::fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| size(&e.path()))
        .sum()
}

/// Every entry of the cache root, by name; none when it does not exist.
pub fn entries(root: &Path) -> Vec<Entry> {
    let mut out: Vec<Entry> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let record = std::fs::read(path.join("variant.json"))
                .ok()
                .and_then(|t| serde_json::from_slice::<VariantRecord>(&t).ok())
                .filter(|r| r.error.is_none() && r.binary.as_deref().is_some_and(is_file));
            Entry {
                mirrors: name == "git",
                bytes: size(&path),
                name,
                path,
                record,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn is_file(p: &str) -> bool {
    Path::new(p).is_file()
}

/// "204.1 MB (204,112,384 bytes)"-style: MB to read, bytes to check.
pub fn bytes_text(b: u64) -> String {
    format!("{:.1} MB ({b} bytes)", b as f64 / 1e6)
}

/// The listing: one line per entry, its size, state and what it was built from.
pub fn list(root: &Path) -> String {
    let es = entries(root);
    let total: u64 = es.iter().map(|e| e.bytes).sum();
    let mut s = format!(
        "{}: {} entries, {}\n",
        root.display(),
        es.len(),
        bytes_text(total)
    );
    for e in &es {
        let what = match (&e.record, e.mirrors) {
            (_, true) => "git mirrors of remote sources".to_string(),
            (Some(r), _) => {
                let kept: u64 = KEPT.iter().map(|k| size(&e.path.join(k))).sum();
                let mut w = format!(
                    "built {} at {}",
                    r.service,
                    &r.commit[..r.commit.len().min(12)]
                );
                for (k, v) in &r.pins {
                    w += &format!(", {k} = {v}");
                }
                for (k, p) in &r.patches {
                    let c = p.commit.as_deref().unwrap_or("no commit");
                    w += &format!(", {k} from {} {}", p.source, &c[..c.len().min(12)]);
                }
                format!("{w}; prune keeps {:.1} MB", kept as f64 / 1e6)
            }
            (None, false) => "incomplete: no build record (failed, interrupted or building \
                              now); removed by prune --all only"
                .to_string(),
        };
        s += &format!(
            "  {:<16}  {:>10.1} MB  {}\n",
            visible(&e.name),
            e.bytes as f64 / 1e6,
            visible(&what)
        );
    }
    s
}

/// What was removed and the bytes freed.
#[derive(Debug, Default)]
pub struct Pruned {
    pub removed: Vec<PathBuf>,
    pub freed: u64,
}

/// Removes what no later run reads: every built entry's source tree and build directory
/// (its binary and record stay, so it is still reused); with `all`, every entry whole.
pub fn prune(root: &Path, all: bool) -> anyhow::Result<Pruned> {
    let mut p = Pruned::default();
    for e in entries(root) {
        let doomed: Vec<PathBuf> = if all {
            vec![e.path.clone()]
        } else if e.record.is_some() {
            std::fs::read_dir(&e.path)?
                .flatten()
                .filter(|c| !KEPT.contains(&c.file_name().to_string_lossy().as_ref()))
                .map(|c| c.path())
                .collect()
        } else {
            vec![]
        };
        for d in doomed {
            let bytes = size(&d);
            let meta = std::fs::symlink_metadata(&d)?;
            if meta.is_dir() {
                std::fs::remove_dir_all(&d)
            } else {
                std::fs::remove_file(&d)
            }
            .map_err(|err| anyhow::anyhow!("cannot remove {}: {err}", d.display()))?;
            p.freed += bytes;
            p.removed.push(d);
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prune_keeps_what_a_run_reuses_and_all_removes_everything() {
        let root =
            std::env::temp_dir().join(format!("pingmatrix-variant-prune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let built = root.join("aaaa");
        std::fs::create_dir_all(built.join("bin")).unwrap();
        std::fs::create_dir_all(built.join("build/release")).unwrap();
        std::fs::create_dir_all(built.join("src")).unwrap();
        let bin = built.join("bin/ping-x");
        std::fs::write(&bin, [1u8; 100]).unwrap();
        std::fs::write(built.join("build/release/big"), [0u8; 5000]).unwrap();
        std::fs::write(built.join("src/Cargo.toml"), [0u8; 300]).unwrap();
        let rec = serde_json::json!({
            "service": "ping-x@v", "base": "ping-x", "variant": "v", "rev": "HEAD",
            "commit": "c".repeat(40), "resolved": {}, "cargo_lock_sha256": "0",
            "cache_key": "aaaa", "build_command": "cargo build", "cached": false,
            "binary": bin.display().to_string(), "binary_sha256": "0"
        });
        std::fs::write(built.join("variant.json"), rec.to_string()).unwrap();
        let partial = root.join("bbbb/build");
        std::fs::create_dir_all(&partial).unwrap();
        std::fs::write(partial.join("x"), [0u8; 700]).unwrap();

        let listed = list(&root);
        assert!(listed.contains("2 entries"), "{listed}");
        assert!(
            listed.contains("built ping-x@v at cccccccccccc"),
            "{listed}"
        );
        assert!(listed.contains("incomplete"), "{listed}");
        let p = prune(&root, false).unwrap();
        assert_eq!(p.freed, 5300, "{p:?}");
        assert!(bin.exists() && built.join("variant.json").exists());
        assert!(!built.join("build").exists() && !built.join("src").exists());
        assert!(
            partial.exists(),
            "an incomplete entry may be a build in progress"
        );
        let p = prune(&root, true).unwrap();
        assert_eq!(p.freed, 700 + 100 + rec.to_string().len() as u64);
        assert!(entries(&root).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
