//! Exposes the locked versions of the runtime and HTTP crates to the start-up line.

#[path = "../common/src/lockfile.rs"]
mod lockfile;

fn main() {
    let lock = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.lock");
    println!("cargo:rerun-if-changed={lock}");
    let text = std::fs::read_to_string(lock).unwrap_or_default();
    for (var, krate) in [
        ("PING_MAY_VERSION", "may"),
        ("PING_MINIHTTP_VERSION", "may_minihttp"),
    ] {
        let v = lockfile::locked_version(&text, krate).unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env={var}={v}");
    }
}
