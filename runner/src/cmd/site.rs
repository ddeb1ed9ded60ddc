//! `matrix site [results/] --out <dir>`: finds every result set under a directory, writes
//! each run's page and the index (runs, compare view, history) into `<dir>`, mirroring the
//! results tree so `<dir>/<run-id>/index.html` is the page `results/<run-id>/index.html`
//! holds, and each compare pair's script under `<dir>/compare/`. Also the run page writer
//! `matrix report --html` and `matrix run` use.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::SiteArgs;
use crate::export::html;
use crate::results::set::{self, ResultSet};
use crate::results::store::write_atomic;
use crate::results::untrusted::visible;
use crate::site::{self, view::Other, view::SiteRun};

/// Writes `<run>/index.html`; returns its path.
pub fn write_run_page(set: &ResultSet) -> anyhow::Result<PathBuf> {
    let path = set.dir.join("index.html");
    write_atomic(&path, html::run_page(set)?.as_bytes())?;
    Ok(path)
}

/// What was found under the results directory: runs by path relative to it, and the rest.
struct Found {
    runs: Vec<(PathBuf, ResultSet)>,
    others: Vec<Other>,
}

fn subdirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    Ok(v)
}

/// A result set is a directory with results.json, at the top level or one below (e.g.
/// `results/micro/<id>/`). Directories with other JSON are listed as not matrix runs.
/// A run given as the results directory itself is named by its directory's name, so its page
/// is `<out>/<name>/index.html` beside the index, not the index's own path.
fn find(root: &Path, dir: &Path, depth: u32, found: &mut Found) -> anyhow::Result<()> {
    let mut rel = dir.strip_prefix(root).unwrap_or(dir).to_path_buf();
    if rel.as_os_str().is_empty() {
        let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        rel = abs
            .file_name()
            .map_or_else(|| PathBuf::from("run"), PathBuf::from);
    }
    if dir.join("results.json").is_file() {
        match set::load(dir) {
            Ok(mut s) => {
                // Named by its place in the results tree, not by this machine's path to it:
                // the site is the same wherever it is built (`nix build .#site` too).
                s.label = rel.display().to_string();
                found.runs.push((rel, s))
            }
            Err(e) => found.others.push(Other {
                path: rel.display().to_string(),
                note: format!("could not be read: {e:#}"),
                href: None,
            }),
        }
        return Ok(());
    }
    let json: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    if !json.is_empty() && dir != root {
        found.others.push(Other {
            path: rel.display().to_string(),
            note: format!("not a matrix run ({}): no page", json.join(", ")),
            href: None,
        });
    }
    if depth < 2 {
        for d in subdirs(dir)? {
            find(root, &d, depth + 1, found)?;
        }
    }
    Ok(())
}

/// A run page's link from the index: relative (`./`, so no directory name can be taken for a
/// scheme such as `javascript:`), each segment percent-encoded (so `#`, `?` and `%` in a
/// name stay part of the path), forward slashes whatever the platform.
fn page_href(rel: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut href = String::from(".");
    for c in rel.components() {
        href.push('/');
        for &b in c.as_os_str().as_bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                href.push(char::from(b));
            } else {
                href.push_str(&format!("%{b:02X}"));
            }
        }
    }
    href + "/index.html"
}

pub fn cmd(args: &SiteArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.results.is_dir(),
        "{}: no such results directory",
        args.results.display()
    );
    let mut found = Found {
        runs: Vec::new(),
        others: Vec::new(),
    };
    find(&args.results, &args.results, 0, &mut found)?;
    anyhow::ensure!(
        !found.runs.is_empty(),
        "{}: no result set (a directory with results.json) found",
        args.results.display()
    );
    for o in &found.others {
        // Directory names and the errors quoting them may hold anything: printed visibly.
        eprintln!("site: {}: {}", visible(&o.path), visible(&o.note));
    }
    // A run's own index.html is its page: the site's index must not replace it.
    let out = std::fs::canonicalize(&args.out).unwrap_or_else(|_| args.out.clone());
    for (_, s) in &found.runs {
        anyhow::ensure!(
            !std::fs::canonicalize(&s.dir).is_ok_and(|d| d == out),
            "{}: --out is the run directory {}; the site's index.html would replace the run's \
             own page (pass another --out; `matrix report --html` writes the run's page)",
            args.out.display(),
            s.dir.display()
        );
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut runs = Vec::new();
    for (rel, s) in &found.runs {
        let dir = args.out.join(rel);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        write_atomic(&dir.join("index.html"), html::run_page(s)?.as_bytes())?;
        runs.push(SiteRun {
            set: s,
            page: page_href(rel),
        });
    }
    let site = site::files(&runs, &found.others)?;
    for (rel, js) in &site.pairs {
        let path = args.out.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_atomic(&path, js.as_bytes())?;
    }
    let index = args.out.join("index.html");
    write_atomic(&index, site.index.as_bytes())?;
    println!(
        "wrote {} ({} runs, {} run pages, {} compare pairs under compare/)",
        index.display(),
        runs.len(),
        runs.len(),
        site.pairs.len()
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory named `javascript:…` used to become a script URL; `#`, `?` and `%` in a
    /// name cut its link short.
    #[test]
    fn a_run_page_link_is_relative_and_percent_encoded() {
        assert_eq!(
            page_href(Path::new("2026-11-30T14-06-29Z-14f462b")),
            "./2026-11-30T14-06-29Z-14f462b/index.html"
        );
        assert_eq!(
            page_href(Path::new("javascript:alert(1)")),
            "./javascript%3Aalert%281%29/index.html"
        );
        assert_eq!(
            page_href(Path::new("micro/a#b?c%d e")),
            "./micro/a%23b%3Fc%25d%20e/index.html"
        );
    }
}
