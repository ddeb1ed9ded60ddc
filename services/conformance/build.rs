//! Generates the suite's service table from the one list of services (services/services.toml):
//! `tests/contract.rs` includes it, so a new service is tested without touching the suite.

use std::fmt::Write as _;

fn main() {
    let list = concat!(env!("CARGO_MANIFEST_DIR"), "/../services.toml");
    println!("cargo:rerun-if-changed={list}");
    let text = std::fs::read_to_string(list).unwrap_or_else(|e| panic!("read {list}: {e}"));
    let services = ping_catalogue::parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let mut out = String::from("conformance! {\n");
    for s in &services {
        let module = s.dir.replace('-', "_");
        writeln!(out, "    {module} => {:?},", s.name).unwrap();
    }
    out.push_str("}\n\n/// Services with no epoll fallback: skipped (with a message) where io_uring cannot be set up.\nconst IO_URING_ONLY: &[&str] = &[");
    for s in services.iter().filter(|s| s.io_uring_only) {
        write!(out, "{:?}, ", s.name).unwrap();
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("services.rs");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("write {}: {e}", dest.display()));
}
