//! README's list of committed runs: every result set beside the headline's run that has its
//! page, with the matrix it ran and links to its page and results.md — generated with the
//! headline (`matrix report <run> --readme`), so a committed run is never missing from it.
//! Nothing read from a run becomes markup: a directory name is listed only when it is a run
//! id, and a matrix file is named only when it is one of the repository's own.

use std::fmt::Write as _;
use std::path::Path;

use crate::readme::link;

/// The repository's matrix files, as a run records its `config_path`, and what each is.
const MATRICES: [(&str, &str); 4] = [
    ("matrix.toml", "the default matrix"),
    ("matrix-counted.toml", "counted (`matrix-counted.toml`)"),
    (
        "matrix-variants.toml",
        "runtime versions (`matrix-variants.toml`)",
    ),
    ("matrix-full.toml", "the full sweep (`matrix-full.toml`)"),
];

/// `2026-12-04T06-11-06Z-7357b8a`: a run id as `matrix run` names its directory.
fn is_run_id(name: &str) -> bool {
    let b = name.as_bytes();
    let stamp = "0000-00-00T00-00-00Z-";
    b.len() > stamp.len() + 6
        && stamp.bytes().zip(b).all(|(s, &c)| match s {
            b'0' => c.is_ascii_digit(),
            s => s == c,
        })
        && b[stamp.len()..]
            .iter()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

/// What a run was, from its run.json: its matrix, and whether it was quick, a subset or
/// counted instructions beyond its matrix's habit.
fn what(run: &serde_json::Value) -> String {
    let config = run["config_path"].as_str().unwrap_or("");
    let mut s = MATRICES
        .iter()
        .find(|m| m.0 == config)
        .map_or("another matrix file", |m| m.1)
        .to_string();
    if run["quick"] == true {
        s.push_str(", `--quick`");
    }
    if run["only"].as_array().is_some_and(|o| !o.is_empty()) {
        s.push_str(", a subset (`--only`)");
    }
    let counted = run["command_line"]
        .as_array()
        .is_some_and(|a| a.iter().any(|w| w == "--count-instructions"));
    if counted && config != "matrix-counted.toml" {
        s.push_str(", instructions counted");
    }
    s
}

/// The list, links relative to `readme_dir`.
pub fn render(results_dir: &Path, readme_dir: &Path) -> anyhow::Result<String> {
    let mut names: Vec<String> = std::fs::read_dir(results_dir)
        .map_err(|e| anyhow::anyhow!("{}: {e}", results_dir.display()))?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| is_run_id(n))
        .filter(|n| {
            let d = results_dir.join(n);
            d.join("run.json").is_file() && d.join("index.html").is_file()
        })
        .collect();
    names.sort();
    let mut o = String::new();
    let _ = writeln!(o, "| run | what it ran | results |\n|---|---|---|");
    for n in names.iter().rev() {
        let d = results_dir.join(n);
        let run: serde_json::Value = std::fs::read_to_string(d.join("run.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let page = link(readme_dir, &d.join("index.html"))?;
        let md = if d.join("results.md").is_file() {
            format!("[results.md]({})", link(readme_dir, &d.join("results.md"))?)
        } else {
            "–".into()
        };
        let _ = writeln!(o, "| [{n}]({page}) | {} | {md} |", what(&run));
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_run_ids_are_listed() {
        assert!(is_run_id("2026-12-04T06-11-06Z-7357b8a"));
        for bad in [
            "README.md",
            "micro",
            "2026-12-04T06-11-06Z-7357B8A",
            "2026-12-04T06-11-06Z-](x)",
            "2026-12-04T06-11-06Z-",
            "2026-12-04 06-11-06Z-7357b8a",
        ] {
            assert!(!is_run_id(bad), "{bad}");
        }
    }

    #[test]
    fn a_matrix_file_is_named_only_when_it_is_the_repositorys() {
        let run = serde_json::json!({"config_path": "matrix-counted.toml", "quick": false, "only": [],
            "command_line": ["matrix", "run", "--count-instructions"]});
        assert_eq!(what(&run), "counted (`matrix-counted.toml`)");
        let run = serde_json::json!({"config_path": "<b>x</b>.toml", "quick": true, "only": ["level=c1"],
            "command_line": ["matrix", "run", "--count-instructions"]});
        assert_eq!(
            what(&run),
            "another matrix file, `--quick`, a subset (`--only`), instructions counted"
        );
    }
}
