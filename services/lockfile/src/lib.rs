//! Version of a locked package, read from `Cargo.lock` text.
//!
//! Dependency-free on purpose: it is every service's build-dependency, so the start-up line
//! reports the runtime version actually built, without hard-coding it.

/// Returns the version of the first `[[package]]` named `name` in a `Cargo.lock` text.
pub fn locked_version(lock: &str, name: &str) -> Option<String> {
    let wanted = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted {
            let next = lines.next()?.trim();
            let v = next.strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(v.to_owned());
        }
    }
    None
}

/// Build-script side: exports each `(env var, crate)` pair's locked version (or `unknown`) to
/// the crate being built, and reruns the script when the workspace's `Cargo.lock` changes.
/// `manifest_dir` is the service crate's `CARGO_MANIFEST_DIR` (two levels below the root).
pub fn emit_locked_versions(manifest_dir: &str, pairs: &[(&str, &str)]) {
    let lock = format!("{manifest_dir}/../../Cargo.lock");
    println!("cargo:rerun-if-changed={lock}");
    let text = std::fs::read_to_string(&lock).unwrap_or_default();
    for (var, krate) in pairs {
        let v = locked_version(&text, krate).unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env={var}={v}");
    }
}

#[cfg(test)]
mod tests {
    use super::locked_version;

    #[test]
    fn finds_exact_name_only() {
        let lock = "[[package]]\nname = \"may_minihttp\"\nversion = \"0.1.11\"\n\n[[package]]\nname = \"may\"\nversion = \"0.3.51\"\n";
        assert_eq!(locked_version(lock, "may").as_deref(), Some("0.3.51"));
        assert_eq!(
            locked_version(lock, "may_minihttp").as_deref(),
            Some("0.1.11")
        );
        assert_eq!(locked_version(lock, "tokio"), None);
    }
}
