//! `matrix site [results/] --out <dir>`: finds every result set under a directory, writes
//! each run's page and the index (runs, compare view, history) into `<dir>`, mirroring the
//! results tree so `<dir>/<run-id>/index.html` is the page `results/<run-id>/index.html`
//! holds, and each compare pair's script under `<dir>/compare/`. Also the run page writer
//! `matrix report --html` and `matrix run` use.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::SiteArgs;
use crate::export::html::{self, site_view::Other, site_view::SiteRun};
use crate::results::set::{self, ResultSet};
use crate::results::store::write_atomic;
use crate::results::untrusted::visible;

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
fn find(root: &Path, dir: &Path, depth: u32, found: &mut Found) -> anyhow::Result<()> {
    let rel = dir.strip_prefix(root).unwrap_or(dir).to_path_buf();
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
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let mut runs = Vec::new();
    for (rel, s) in &found.runs {
        let dir = args.out.join(rel);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        write_atomic(&dir.join("index.html"), html::run_page(s)?.as_bytes())?;
        // Forward slashes: the href is a URL, whatever the platform.
        let page = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
            + "/index.html";
        runs.push(SiteRun { set: s, page });
    }
    let site = html::site(&runs, &found.others)?;
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
