//! The runner's layering, held by a test rather than prose (`runner/src/lib.rs` states the
//! rules): no circle between its top-level modules, the lower layers import no upper one, the
//! views (`export`, `report`, `compare`) import no other view, and `cmd` (wiring) and `site`
//! (above the views) are imported by no module below them; every module has a layer
//! (`LAYERS`), the data layer imports nothing outside it, and no view imports a measuring
//! module. Read from the sources: every `crate::<module>` path outside comments and test
//! modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// module → the top-level modules it uses (with one file that does).
fn graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let root = src();
    let mut all = Vec::new();
    files(&root, &mut all);
    let top = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(&root).ok()?;
        let first = rel
            .components()
            .next()?
            .as_os_str()
            .to_str()?
            .trim_end_matches(".rs");
        (!["lib", "main", "bin"].contains(&first)).then(|| first.to_string())
    };
    let modules: BTreeSet<String> = all.iter().filter_map(|p| top(p)).collect();
    let mut g: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for p in &all {
        let Some(from) = top(p) else { continue };
        let text = std::fs::read_to_string(p).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let code: String = code
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                // use crate::{a::b, c};
                let inner = group.split('}').next().unwrap_or_default();
                used.extend(inner.split(',').filter_map(|x| x.trim().split("::").next()));
            } else {
                used.insert(
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or_default(),
                );
            }
        }
        for u in used {
            if u != from && modules.contains(u) {
                g.entry(from.clone())
                    .or_default()
                    .entry(u.to_string())
                    .or_insert_with(|| p.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    g
}

#[test]
fn the_runner_s_modules_form_no_circle_and_keep_their_layers() {
    let g = graph();
    let mut bad = Vec::new();
    // A circle: a module that reaches itself.
    for start in g.keys() {
        let mut todo: Vec<(&String, Vec<&String>)> = vec![(start, vec![start])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = todo.pop() {
            for next in g.get(m).into_iter().flat_map(|e| e.keys()) {
                if next == start {
                    bad.push(format!(
                        "circle: {} → {start}",
                        path.iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(" → ")
                    ));
                } else if seen.insert(next) {
                    let mut p = path.clone();
                    p.push(next);
                    todo.push((next, p));
                }
            }
        }
    }
    let uses = |a: &str, b: &str| g.get(a).and_then(|e| e.get(b));
    let lower = ["results", "env", "limits", "process", "cargo"];
    let upper = [
        "config", "plan", "start", "cell", "rep", "schedule", "cmd", "export", "report", "compare",
        "site",
    ];
    for a in lower {
        for b in upper {
            if let Some(f) = uses(a, b) {
                bad.push(format!("lower layer {a} uses {b} ({f})"));
            }
        }
    }
    let views = ["export", "report", "compare"];
    for a in views {
        for b in views.iter().chain(&["site"]) {
            if let Some(f) = uses(a, b).filter(|_| a != *b) {
                bad.push(format!("view {a} uses {b} ({f})"));
            }
        }
    }
    for (a, e) in &g {
        if a != "cmd"
            && let Some(f) = e.get("cmd")
        {
            bad.push(format!("{a} uses cmd, which is wiring only ({f})"));
        }
    }
    // Every module has its place: a new one is put in a layer here before it lands.
    for m in g.keys().chain(g.values().flat_map(|e| e.keys())) {
        if !LAYERS.iter().any(|(_, ms)| ms.contains(&m.as_str())) {
            bad.push(format!("module {m} is in no layer of LAYERS"));
        }
    }
    // The data layer imports nothing outside it: reading a result set spawns nothing.
    let data = layer("data");
    for d in &data {
        for (m, f) in g.get(*d).into_iter().flatten() {
            if !data.contains(&m.as_str()) {
                bad.push(format!("data layer {d} uses {m} ({f})"));
            }
        }
    }
    // No view imports a measuring module: what a view shows comes from what the run
    // recorded.
    let measuring = layer("measuring");
    for v in layer("views") {
        for m in &measuring {
            if let Some(f) = uses(v, m) {
                bad.push(format!("view {v} uses measuring module {m} ({f})"));
            }
        }
    }
    bad.dedup();
    assert!(bad.is_empty(), "{bad:#?}");
    // The scan sees the imports it checks.
    assert!(uses("report", "results").is_some() && uses("site", "compare").is_some());
}

/// Every top-level module of the runner, by layer.
const LAYERS: &[(&str, &[&str])] = &[
    ("data", &["results", "catalogue"]),
    (
        "platform",
        &[
            "env",
            "limits",
            "process",
            "cargo",
            "binaries",
            "interrupt",
            "siblings",
            "readme",
        ],
    ),
    (
        "measuring",
        &[
            "count",
            "sample",
            "observe",
            "load",
            "churn",
            "service",
            "floor",
            "profile",
            "flamegraph",
            "cell",
            "rep",
            "host",
            "agent",
        ],
    ),
    (
        "orchestration",
        &[
            "config", "plan", "start", "schedule", "finish", "progress", "variant", "k8s",
        ],
    ),
    ("views", &["export", "report", "compare"]),
    ("site", &["site"]),
    ("wiring", &["cmd", "cli"]),
];

fn layer(name: &str) -> Vec<&'static str> {
    LAYERS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, ms)| ms.to_vec())
        .unwrap_or_default()
}
