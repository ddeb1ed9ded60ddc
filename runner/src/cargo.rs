//! What a Cargo.toml and a Cargo.lock say, read as data: a package's name, and which locked
//! versions are linked into a package (its dependency closure). Both the matrix file's
//! checks (`config`) and the variant builds (`variant`) read them; neither owns the other.

use std::path::Path;

use anyhow::Context;

/// Whether `package`'s dependency closure in the lock `text` has `krate` (the whole lock
/// when `package` is not in it; false when the text is not a lock).
pub fn depends_on(text: &str, package: &str, krate: &str) -> bool {
    let Ok(lock) = toml::from_str::<toml::Table>(text) else {
        return false;
    };
    let packages = packages(&lock);
    let linked = closure(&packages, package);
    packages
        .iter()
        .any(|(n, v, _)| n == krate && (linked.is_empty() || linked.contains(&(n, v))))
}

fn packages(lock: &toml::Table) -> Vec<(String, String, Vec<String>)> {
    lock.get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let n = p.get("name")?.as_str()?.to_string();
            let v = p.get("version")?.as_str()?.to_string();
            let deps = p
                .get("dependencies")
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|d| d.as_str().map(str::to_string))
                .collect();
            Some((n, v, deps))
        })
        .collect()
}

/// How `package` links `krate` in a lock: None when it does not; else the shortest chain of
/// package names from `package` to `krate` (two names: a direct dependency), the names of
/// every direct dependency that leads to it, and the versions of `krate` linked.
pub fn link_path(text: &str, package: &str, krate: &str) -> Option<Link> {
    let lock = toml::from_str::<toml::Table>(text).ok()?;
    let packages = packages(&lock);
    let find = |entry: &str| {
        let mut parts = entry.split(' ');
        let name = parts.next().unwrap_or_default();
        let version = parts.next();
        packages
            .iter()
            .position(|(n, v, _)| n == name && version.is_none_or(|want| v == want))
    };
    let root = find(package)?;
    // Breadth first from the package: the first time the crate is reached is a shortest chain.
    let mut parent: Vec<Option<usize>> = vec![None; packages.len()];
    let mut seen = vec![false; packages.len()];
    seen[root] = true;
    let mut queue = std::collections::VecDeque::from([root]);
    let mut hit = None;
    while let Some(i) = queue.pop_front() {
        if packages[i].0 == krate && i != root {
            hit = Some(i);
            break;
        }
        for j in packages[i].2.iter().filter_map(|d| find(d)) {
            if !seen[j] {
                seen[j] = true;
                parent[j] = Some(i);
                queue.push_back(j);
            }
        }
    }
    let mut chain = vec![packages[hit?].0.clone()];
    let mut at = hit?;
    while let Some(p) = parent[at] {
        chain.push(packages[p].0.clone());
        at = p;
    }
    chain.reverse();
    let linked = closure(&packages, package);
    let through = packages[root]
        .2
        .iter()
        .filter_map(|d| find(d))
        .filter(|&j| {
            packages[j].0 == krate
                || closure(&packages, &format!("{} {}", packages[j].0, packages[j].1))
                    .iter()
                    .any(|(n, _)| *n == krate)
        })
        .map(|j| packages[j].0.clone())
        .collect();
    let versions = linked
        .iter()
        .filter(|(n, _)| *n == krate)
        .map(|(_, v)| (*v).clone())
        .collect();
    Some(Link {
        chain,
        through,
        versions,
    })
}

/// See [`link_path`].
#[derive(Debug, PartialEq)]
pub struct Link {
    pub chain: Vec<String>,
    pub through: Vec<String>,
    pub versions: Vec<String>,
}

/// The `[package] name` of a Cargo.toml.
pub fn package_name(manifest: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", manifest.display()))?;
    doc.get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str)
        .map(str::to_string)
        .with_context(|| format!("{} has no [package] name", manifest.display()))
}

/// Resolved versions of `crates` in the tree's Cargo.lock that are linked into `package`
/// (its dependency closure): the workspace lock also holds versions only other services use.
/// A crate linked twice: both. `package` not in the lock: every locked version.
pub fn resolved(
    src: &Path,
    package: &str,
    crates: &[&str],
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(src.join("Cargo.lock")) else {
        return out;
    };
    let Ok(lock) = toml::from_str::<toml::Table>(&text) else {
        return out;
    };
    let packages = packages(&lock);
    let linked = closure(&packages, package);
    for (n, v, _) in &packages {
        if crates.contains(&n.as_str()) && (linked.is_empty() || linked.contains(&(n, v))) {
            out.entry(n.clone())
                .or_insert_with(Vec::new)
                .push(v.clone());
        }
    }
    out
}

/// (name, version) of every package reachable from `root` in the lock's dependency lists,
/// whose entries are "name" when the name is locked once, else "name version[ (source)]".
fn closure<'a>(
    packages: &'a [(String, String, Vec<String>)],
    root: &str,
) -> std::collections::BTreeSet<(&'a String, &'a String)> {
    let find = |entry: &str| {
        let mut parts = entry.split(' ');
        let name = parts.next().unwrap_or_default();
        let version = parts.next();
        packages
            .iter()
            .find(|(n, v, _)| n == name && version.is_none_or(|want| v == want))
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut todo: Vec<&(String, String, Vec<String>)> = find(root).into_iter().collect();
    while let Some(p) = todo.pop() {
        if seen.insert((&p.0, &p.1)) {
            todo.extend(p.2.iter().filter_map(|d| find(d)));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolved_counts_only_versions_linked_into_the_package() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-resolved-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("Cargo.lock"),
            r#"version = 4
[[package]]
name = "ping-a"
version = "0.1.0"
dependencies = ["hyper", "tokio 1.51.0"]
[[package]]
name = "ping-b"
version = "0.1.0"
dependencies = ["tokio 1.54.1"]
[[package]]
name = "hyper"
version = "1.0.0"
dependencies = ["tokio 1.51.0"]
[[package]]
name = "tokio"
version = "1.51.0"
[[package]]
name = "tokio"
version = "1.54.1"
"#,
        )
        .unwrap();
        let got = resolved(&dir, "ping-a", &["tokio", "hyper"]);
        assert_eq!(got["tokio"], vec!["1.51.0"]);
        assert_eq!(got["hyper"], vec!["1.0.0"]);
        let all = resolved(&dir, "not-there", &["tokio"]);
        let text = std::fs::read_to_string(dir.join("Cargo.lock")).unwrap();
        assert!(depends_on(&text, "ping-a", "hyper"));
        assert!(!depends_on(&text, "ping-b", "hyper"));
        assert!(depends_on(&text, "not-there", "hyper"));
        assert!(!depends_on(&text, "ping-a", "httparse"));
        let l = link_path(&text, "ping-a", "tokio").unwrap();
        assert_eq!(l.chain, ["ping-a", "tokio"], "direct is the shortest");
        assert_eq!(l.through, ["hyper", "tokio"]);
        assert_eq!(l.versions, ["1.51.0"]);
        let l = link_path(&text, "ping-b", "tokio").unwrap();
        assert_eq!(
            (l.through, l.versions),
            (vec!["tokio".into()], vec!["1.54.1".into()])
        );
        assert_eq!(link_path(&text, "ping-b", "hyper"), None);
        assert_eq!(link_path(&text, "ping-a", "ping-a"), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(all["tokio"], vec!["1.51.0", "1.54.1"]);
    }
}
