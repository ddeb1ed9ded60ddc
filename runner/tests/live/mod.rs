//! What the tests that start the real binaries share: finding them in the target directory,
//! a scratch directory removed on drop, reading JSON results and showing a command's output.

#![allow(dead_code)] // each test binary uses a different part

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Instant;

/// `<target>/debug`, where `cargo build --workspace --bins` put the binaries
/// (this test runs from `<target>/debug/deps/<test>-<hash>`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} not found: run `cargo build --workspace --bins` first",
        p.display()
    );
    p
}

/// A fresh scratch directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!(
            "pingmatrix-e2e-{tag}-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn read<T: serde::de::DeserializeOwned>(p: &Path) -> T {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

pub fn out_text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
