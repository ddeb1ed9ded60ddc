//! loadgen's method identity: what makes two of its measurements comparable. It covers what
//! measures and nothing else: the crate's version; its own source (every file under
//! `loadgen/src/`, each without its unit tests — the `#[cfg(test)]` module every file ends
//! with); how its dependencies are declared (the `[dependencies]` of `loadgen/Cargo.toml`, the
//! workspace's line for each, and the workspace's `[profile.release]`); and the resolved
//! versions of every crate those dependencies link (from Cargo.lock). Not docs, tests, benches,
//! dev-dependencies or test-target names: a change to those measures nothing differently. Not
//! the repository's commit, which changes with every unrelated edit. `build.rs` computes it
//! (this file is also included there with `#[path]`, so it uses nothing but std) and
//! `loadgen --version` prints it; the runner records it in run.json and refuses to compare
//! runs whose identities differ.
//!
//! The functions here only produce the canonical bytes; the caller hashes them (sha256).

use std::path::Path;

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

/// Canonical bytes of the resolved dependency closure of `root` in `lock`, entered through
/// the dependencies named in `direct` only (a crate's Cargo.lock entry lists its dev- and
/// build-dependencies too, which link nothing into the binary): one `name version` line per
/// crate reachable (itself excluded), sorted. Path crates of the workspace appear by name and
/// version only.
pub fn dependency_bytes(lock: &str, root: &str, direct: &[String]) -> Vec<u8> {
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
    let mut todo: Vec<&LockPackage> = Vec::new();
    let entry = |dep: &String| {
        direct
            .iter()
            .any(|d| Some(d.as_str()) == dep.split(' ').next())
    };
    for d in find(root).map(|p| p.deps.as_slice()).unwrap_or_default() {
        if let Some(q) = find(d).filter(|_| entry(d)) {
            let id = format!("{} {}", q.name, q.version);
            if !seen.contains(&id) {
                seen.push(id);
                todo.push(q);
            }
        }
    }
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

/// The lines of one `[section]` of a TOML manifest (up to the next header), trimmed, blank
/// lines and comments left out. Cargo manifests here keep one key per line.
fn section<'a>(manifest: &'a str, header: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == header;
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            out.push(line);
        }
    }
    out
}

/// The crates a manifest's `[dependencies]` names (`serde.workspace = true` → `serde`).
pub fn declared(manifest: &str) -> Vec<String> {
    section(manifest, "[dependencies]")
        .iter()
        .filter_map(|l| {
            let key = l.split(['=', '.']).next()?.trim();
            (!key.is_empty()).then(|| key.to_string())
        })
        .collect()
}

/// Canonical bytes of how the crate's dependencies are declared and built: its
/// `[dependencies]` lines, the workspace's `[workspace.dependencies]` line of each it takes
/// from the workspace (versions and features), and the workspace's `[profile.release]`.
pub fn declaration_bytes(manifest: &str, workspace: &str) -> Vec<u8> {
    let names = declared(manifest);
    let mut out: Vec<String> = section(manifest, "[dependencies]")
        .into_iter()
        .map(str::to_string)
        .collect();
    for line in section(workspace, "[workspace.dependencies]") {
        let key = line.split('=').next().unwrap_or("").trim();
        if names.iter().any(|n| n == key) {
            out.push(format!("workspace: {line}"));
        }
    }
    out.extend(
        section(workspace, "[profile.release]")
            .into_iter()
            .map(|l| format!("profile.release: {l}")),
    );
    out.join("\n").into_bytes()
}

/// A source file without its unit tests: everything before the first `#[cfg(test)]` at the
/// start of a line (each file of `loadgen/src/` ends with its tests module; a test of this
/// crate holds that).
pub fn without_tests(text: &[u8]) -> &[u8] {
    const MARK: &[u8] = b"\n#[cfg(test)]\n";
    text.windows(MARK.len())
        .position(|w| w == MARK)
        .map_or(text, |i| &text[..=i])
}

/// Every file under `dir`, as (path relative to `root` with `/`, bytes).
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            walk(root, &p, out)?;
        } else {
            let bytes = std::fs::read(&p)?;
            let rel = p.strip_prefix(root).unwrap_or(&p);
            let rel: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push((rel.join("/"), bytes));
        }
    }
    Ok(())
}

/// The two inputs of the identity for the crate in `crate_dir` (its workspace one level up):
/// (source and declarations, resolved dependencies), each to be hashed.
pub fn inputs(crate_dir: &Path) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut files = Vec::new();
    walk(crate_dir, &crate_dir.join("src"), &mut files)?;
    for f in files.iter_mut() {
        let kept = without_tests(&f.1).len();
        f.1.truncate(kept);
    }
    let manifest = std::fs::read_to_string(crate_dir.join("Cargo.toml"))?;
    let workspace = std::fs::read_to_string(crate_dir.join("../Cargo.toml"))?;
    files.push((
        "Cargo.toml (declarations)".into(),
        declaration_bytes(&manifest, &workspace),
    ));
    let lock = std::fs::read_to_string(crate_dir.join("../Cargo.lock"))?;
    let deps = dependency_bytes(&lock, "loadgen", &declared(&manifest));
    Ok((source_bytes(&mut files), deps))
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
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let d = String::from_utf8(dependency_bytes(LOCK, "a", &names(&["b", "c"]))).unwrap();
        assert_eq!(d, "b 0.3.1\nc 2.0.0");
        // Entered through c only, b is still linked (c 2.0.0 depends on it).
        let d = String::from_utf8(dependency_bytes(LOCK, "a", &names(&["c"]))).unwrap();
        assert_eq!(d, "b 0.3.1\nc 2.0.0");
        // A dependency not declared as one (a dev-dependency) links nothing.
        let d = String::from_utf8(dependency_bytes(LOCK, "a", &names(&["b"]))).unwrap();
        assert_eq!(d, "b 0.3.1");
        let none = dependency_bytes(LOCK, "missing", &names(&["b"]));
        assert!(none.is_empty());
    }

    /// A throwaway workspace with a crate `loadgen` in it, for [`inputs`].
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let root = std::env::temp_dir()
                .join(format!("pingmatrix-identity-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            let put = |p: &str, s: &str| {
                let p = root.join(p);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, s).unwrap();
            };
            put(
                "Cargo.toml",
                "[workspace.dependencies]\nb = \"0.3\"\nc = { version = \"2\", features = [\"x\"] }\n\
                 crit = \"1\"\n\n[profile.release]\nopt-level = 3\n",
            );
            put(
                "Cargo.lock",
                "[[package]]\nname = \"loadgen\"\nversion = \"0.1.0\"\ndependencies = [\n \"b\",\n \"c\",\n \"crit\",\n]\n\n\
                 [[package]]\nname = \"b\"\nversion = \"0.3.1\"\n\n[[package]]\nname = \"c\"\nversion = \"2.0.0\"\n\n\
                 [[package]]\nname = \"crit\"\nversion = \"1.0.0\"\n",
            );
            put(
                "loadgen/Cargo.toml",
                "[package]\nname = \"loadgen\"\n\n[dependencies]\nb.workspace = true\nc.workspace = true\n\n\
                 [dev-dependencies]\ncrit.workspace = true\n\n[[test]]\nname = \"loadgen-it\"\npath = \"tests/it/main.rs\"\n",
            );
            put(
                "loadgen/src/lib.rs",
                "pub fn f() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n",
            );
            put("loadgen/README.md", "# loadgen\n");
            put("loadgen/tests/it/main.rs", "#[test]\nfn e2e() {}\n");
            Scratch(root)
        }

        fn edit(&self, path: &str, from: &str, to: &str) {
            let p = self.0.join(path);
            let s = std::fs::read_to_string(&p).unwrap();
            assert!(s.contains(from), "{path} has no {from:?}");
            std::fs::write(&p, s.replacen(from, to, 1)).unwrap();
        }

        fn identity(&self) -> (Vec<u8>, Vec<u8>) {
            inputs(&self.0.join("loadgen")).unwrap()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn docs_tests_test_targets_and_dev_dependencies_leave_the_identity_unchanged() {
        let s = Scratch::new("same");
        let before = s.identity();
        s.edit("loadgen/README.md", "# loadgen", "# loadgen, the generator");
        s.edit("loadgen/tests/it/main.rs", "fn e2e", "fn end_to_end");
        s.edit("loadgen/Cargo.toml", "loadgen-it", "loadgen-e2e");
        s.edit(
            "loadgen/src/lib.rs",
            "fn t() {}",
            "fn t() {\n        assert!(true);\n    }",
        );
        s.edit("Cargo.toml", "crit = \"1\"", "crit = \"1.1\"");
        s.edit("Cargo.lock", "version = \"1.0.0\"", "version = \"1.1.0\"");
        assert_eq!(s.identity(), before);
    }

    #[test]
    fn measuring_code_declared_features_the_profile_and_linked_versions_change_it() {
        let s = Scratch::new("differs");
        let before = s.identity();
        for (path, from, to, which) in [
            ("loadgen/src/lib.rs", "    1\n", "    2\n", 0),
            ("Cargo.toml", "features = [\"x\"]", "features = [\"y\"]", 0),
            ("Cargo.toml", "opt-level = 3", "opt-level = 2", 0),
            ("loadgen/Cargo.toml", "b.workspace = true", "b = \"0.3\"", 0),
            (
                "Cargo.lock",
                "version = \"0.3.1\"",
                "version = \"0.3.2\"",
                1,
            ),
        ] {
            let was = s.identity();
            s.edit(path, from, to);
            let now = s.identity();
            let (a, b) = if which == 0 {
                (&was.0, &now.0)
            } else {
                (&was.1, &now.1)
            };
            assert_ne!(
                a, b,
                "{path}: {from:?} → {to:?} left the identity unchanged"
            );
        }
        assert_ne!(s.identity(), before);
    }

    /// The committed references — the newest complete run under `results/` of the default
    /// matrix and of the counted one, the two README cites — were measured by the loadgen this
    /// tree builds: a change of the identity re-makes them in the same change, or every run
    /// made afterwards is refused against them without `--force`.
    #[test]
    fn the_committed_references_were_measured_by_this_method() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let mine = env!("PINGMATRIX_LOADGEN_IDENTITY");
        let mut runs: Vec<_> = std::fs::read_dir(root.join("results"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("run.json").is_file())
            .collect();
        runs.sort();
        for config in ["matrix.toml", "matrix-counted.toml"] {
            let newest = runs.iter().rev().find_map(|p| {
                let text = std::fs::read_to_string(p.join("run.json")).ok()?;
                let run: serde_json::Value = serde_json::from_str(&text).ok()?;
                let whole = run["config_path"] == config
                    && run["quick"] == false
                    && run["status"] == "completed"
                    && run["only"].as_array().is_none_or(|o| o.is_empty());
                whole.then(|| (p.file_name().unwrap().to_string_lossy().into_owned(), run))
            });
            let (name, run) =
                newest.unwrap_or_else(|| panic!("no complete run of {config} under results/"));
            assert!(
                readme.contains(&format!("results/{name}/")),
                "README does not cite {name}, the newest complete run of {config}"
            );
            let theirs = run["environment"]["loadgen_identity"]
                .as_str()
                .unwrap_or("none recorded");
            assert_eq!(
                theirs,
                mine,
                "loadgen's method identity changed ({theirs} in results/{name} → {mine}): re-make \
                 the reference (`target/release/matrix run{}`), commit it and cite it in README in \
                 the same change",
                if config == "matrix.toml" {
                    " --out results".to_string()
                } else {
                    format!(" --config {config} --count-instructions --out results")
                }
            );
        }
    }

    /// [`without_tests`] cuts each file at its `#[cfg(test)]`: that only leaves out tests if
    /// the tests module is the file's last item.
    #[test]
    fn every_source_file_ends_with_its_tests_module() {
        let mut files = Vec::new();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        walk(root, &root.join("src"), &mut files).unwrap();
        assert!(files.len() > 10, "{}", files.len());
        for (path, bytes) in files {
            let text = String::from_utf8(bytes).unwrap();
            let Some(at) = text.find("\n#[cfg(test)]\n") else {
                continue;
            };
            let rest = &text[at + "\n#[cfg(test)]\n".len()..];
            let mut lines = rest.lines();
            let first = lines.next().unwrap_or("");
            assert!(
                first.starts_with("mod tests {") || first.starts_with("pub(crate) mod tests {"),
                "{path}: #[cfg(test)] is followed by {first:?}, not the tests module"
            );
            let items = [
                "fn ",
                "pub",
                "impl",
                "struct ",
                "enum ",
                "mod ",
                "const ",
                "static ",
                "use ",
                "#[",
                "macro_rules!",
            ];
            for l in lines {
                assert!(
                    !items.iter().any(|i| l.starts_with(i)),
                    "{path}: an item after the tests module ({l:?}) would be left out of the identity"
                );
            }
            assert_eq!(rest.trim_end().lines().last(), Some("}"), "{path}");
        }
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
