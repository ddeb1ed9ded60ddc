//! Computes loadgen's method identity at build time (`src/identity.rs` says what it
//! covers) and embeds it as `PINGMATRIX_LOADGEN_IDENTITY`, printed by `loadgen --version`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[path = "src/identity.rs"]
#[allow(dead_code)]
mod identity;

/// Every file under `dir`, as (path relative to `root` with `/`, bytes).
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push((rel.join("/"), bytes));
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = Vec::new();
    walk(&root, &root.join("src"), &mut files);
    if let Ok(b) = std::fs::read(root.join("Cargo.toml")) {
        files.push(("Cargo.toml".into(), b));
    }
    let src = Sha256::digest(identity::source_bytes(&mut files));
    let lock = std::fs::read_to_string(root.join("../Cargo.lock")).unwrap_or_default();
    let deps = Sha256::digest(identity::dependency_bytes(&lock, "loadgen"));
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let line = identity::format(&version, &format!("{src:x}"), &format!("{deps:x}"));
    println!("cargo:rustc-env=PINGMATRIX_LOADGEN_IDENTITY={line}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=../Cargo.lock");
}
