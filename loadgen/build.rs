//! Computes loadgen's method identity at build time (`src/identity.rs` says what it
//! covers) and embeds it as `PINGMATRIX_LOADGEN_IDENTITY`, printed by `loadgen --version`.

use std::path::PathBuf;

use sha2::{Digest, Sha256};

#[path = "src/identity.rs"]
#[allow(dead_code)]
mod identity;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let (src, deps) = match identity::inputs(&root) {
        Ok(x) => x,
        Err(e) => panic!("loadgen's method identity: cannot read its inputs: {e}"),
    };
    let src = Sha256::digest(src);
    let deps = Sha256::digest(deps);
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let line = identity::format(&version, &format!("{src:x}"), &format!("{deps:x}"));
    println!("cargo:rustc-env=PINGMATRIX_LOADGEN_IDENTITY={line}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
    println!("cargo:rerun-if-changed=../Cargo.toml");
    println!("cargo:rerun-if-changed=../Cargo.lock");
}
