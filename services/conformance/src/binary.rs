//! Locates service binaries next to the test executable (`<target>/<profile>/deps/x-hash`).

use std::path::PathBuf;

/// Path of a binary built by `cargo build --workspace --bins` in this target dir and profile.
pub fn path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable has a parent dir");
    let profile_dir = if deps.ends_with("deps") {
        deps.parent().expect("deps has a parent dir")
    } else {
        deps
    };
    let bin = profile_dir.join(name);
    assert!(
        bin.is_file(),
        "service binary {} not found; run `cargo build --workspace --bins` first",
        bin.display()
    );
    bin
}
