//! loadgen's method identity: what makes two of its measurements comparable. It is the
//! crate's version, its own source (`loadgen/Cargo.toml` and every file under
//! `loadgen/src/`) and the resolved versions of every crate it links (from Cargo.lock) —
//! not the repository's commit, which changes with every unrelated edit. `build.rs`
//! computes it (this file is also included there with `#[path]`, so it uses nothing but
//! std) and `loadgen --version` prints it; the runner records it in run.json and refuses
//! to compare runs whose identities differ.
//!
//! The functions here only produce the canonical bytes; the caller hashes them (sha256).

/// The line prefix `loadgen --version` prints the identity after.
pub const LINE_PREFIX: &str = "method: ";

/// Canonical bytes of loadgen's own source: each file as `path\0len\0bytes`, sorted by
/// path (paths relative to the crate, `/`-separated), so the hash does not depend on the
/// order the files were read in.
pub fn source_bytes(files: &mut [(String, Vec<u8>)]) -> Vec<u8> {
    files.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (path, bytes) in files.iter() {
        out.extend_from_slice(path.as_bytes());
        out.push(0);
        out.extend_from_slice(bytes.len().to_string().as_bytes());
        out.push(0);
        out.extend_from_slice(bytes);
    }
    out
}

/// One `[[package]]` of Cargo.lock: name, version, and its dependencies as written
/// ("name" or "name version").
#[derive(Debug, Clone, PartialEq)]
struct LockPackage {
    name: String,
    version: String,
    deps: Vec<String>,
}

/// Cargo.lock's packages, read line by line (its format is fixed by cargo: one key per
/// line, `dependencies` as a multi-line array of strings).
fn packages(lock: &str) -> Vec<LockPackage> {
    let mut out: Vec<LockPackage> = Vec::new();
    let mut in_deps = false;
    let unquote = |s: &str| s.trim().trim_end_matches(',').trim_matches('"').to_string();
    for line in lock.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            out.push(LockPackage {
                name: String::new(),
                version: String::new(),
                deps: Vec::new(),
            });
            in_deps = false;
            continue;
        }
        let Some(p) = out.last_mut() else { continue };
        if in_deps {
            if line.starts_with(']') {
                in_deps = false;
            } else if !line.is_empty() {
                p.deps.push(unquote(line));
            }
        } else if let Some(v) = line.strip_prefix("name = ") {
            p.name = unquote(v);
        } else if let Some(v) = line.strip_prefix("version = ") {
            p.version = unquote(v);
        } else if let Some(v) = line.strip_prefix("dependencies = [") {
            in_deps = !v.contains(']');
            for d in v
                .trim_end_matches(']')
                .split(',')
                .filter(|d| !d.trim().is_empty())
            {
                p.deps.push(unquote(d));
            }
        }
    }
    out
}

/// Canonical bytes of the resolved dependency closure of `root` in `lock`: one
/// `name version` line per crate reachable from it (itself excluded), sorted. Path
/// crates of the workspace appear by name and version only.
pub fn dependency_bytes(lock: &str, root: &str) -> Vec<u8> {
    let pkgs = packages(lock);
    let find = |dep: &str| -> Option<&LockPackage> {
        let (name, version) = match dep.split_once(' ') {
            Some((n, v)) => (n, Some(v)),
            None => (dep, None),
        };
        pkgs.iter()
            .find(|p| p.name == name && version.is_none_or(|v| v == p.version))
    };
    let mut seen: Vec<String> = Vec::new();
    let mut todo: Vec<&LockPackage> = find(root).into_iter().collect();
    while let Some(p) = todo.pop() {
        for d in &p.deps {
            if let Some(q) = find(d) {
                let id = format!("{} {}", q.name, q.version);
                if !seen.contains(&id) {
                    seen.push(id);
                    todo.push(q);
                }
            }
        }
    }
    seen.sort();
    seen.join("\n").into_bytes()
}

/// The identity line's text: `loadgen <version> src=<hex> deps=<hex>` (the hex strings
/// being sha256 digests of [`source_bytes`] and [`dependency_bytes`], shortened to 16).
pub fn format(version: &str, src_hex: &str, deps_hex: &str) -> String {
    let short = |h: &str| h.chars().take(16).collect::<String>();
    format!(
        "loadgen {version} src={} deps={}",
        short(src_hex),
        short(deps_hex)
    )
}

/// The parts of an identity line, for saying which of them differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parts<'a> {
    pub version: &'a str,
    pub src: &'a str,
    pub deps: &'a str,
}

/// Splits a [`format`]ted identity; None when it is not one.
pub fn parse(identity: &str) -> Option<Parts<'_>> {
    let rest = identity.strip_prefix("loadgen ")?;
    let mut it = rest.split(' ');
    let version = it.next()?;
    let src = it.next()?.strip_prefix("src=")?;
    let deps = it.next()?.strip_prefix("deps=")?;
    Some(Parts { version, src, deps })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"
version = 4

[[package]]
name = "a"
version = "1.0.0"
dependencies = [
 "b",
 "c 2.0.0",
]

[[package]]
name = "b"
version = "0.3.1"

[[package]]
name = "c"
version = "1.0.0"

[[package]]
name = "c"
version = "2.0.0"
dependencies = ["b"]

[[package]]
name = "unrelated"
version = "9.9.9"
dependencies = [
 "a",
]
"#;

    #[test]
    fn the_closure_follows_versioned_dependencies_and_skips_unrelated_crates() {
        let d = String::from_utf8(dependency_bytes(LOCK, "a")).unwrap();
        assert_eq!(d, "b 0.3.1\nc 2.0.0");
        let none = dependency_bytes(LOCK, "missing");
        assert!(none.is_empty());
    }

    #[test]
    fn the_source_digest_input_ignores_read_order_but_not_content() {
        let mut x = vec![
            ("src/b.rs".into(), b"b".to_vec()),
            ("src/a.rs".into(), b"a".to_vec()),
        ];
        let mut y = vec![
            ("src/a.rs".into(), b"a".to_vec()),
            ("src/b.rs".into(), b"b".to_vec()),
        ];
        assert_eq!(source_bytes(&mut x), source_bytes(&mut y));
        let mut z = vec![
            ("src/a.rs".into(), b"A".to_vec()),
            ("src/b.rs".into(), b"b".to_vec()),
        ];
        assert_ne!(source_bytes(&mut x), source_bytes(&mut z));
    }

    #[test]
    fn an_identity_line_round_trips() {
        let s = format("0.1.0", "0123456789abcdef0123", "fedcba9876543210ff");
        assert_eq!(
            s,
            "loadgen 0.1.0 src=0123456789abcdef deps=fedcba9876543210"
        );
        let p = parse(&s).unwrap();
        assert_eq!(
            (p.version, p.src, p.deps),
            ("0.1.0", "0123456789abcdef", "fedcba9876543210")
        );
        assert_eq!(parse("loadgen 0.1.0"), None);
    }
}
