//! Records, at build time, what a Nix-built `matrix` cannot discover at run time: the
//! compiler that built it and the sha256 of the workspace Cargo.lock.

use sha2::{Digest, Sha256};

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PINGMATRIX_BUILD_RUSTC={version}");
    let lock = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../Cargo.lock");
    let hash = std::fs::read(&lock)
        .map(|b| format!("{:x}", Sha256::digest(&b)))
        .unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=PINGMATRIX_BUILD_CARGO_LOCK_SHA256={hash}");
    println!(
        "cargo:rustc-env=PINGMATRIX_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    println!("cargo:rerun-if-changed=../Cargo.lock");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
