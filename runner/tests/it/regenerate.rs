//! The committed result sets are the golden files of the output code: results.json (from the
//! cell files), results.md, every plot, the README sections and `matrix compare` in every format
//! must come out byte-identical when regenerated. A change to any of those outputs has to show up
//! here and be committed together with the regenerated files.

use crate::support::live::{Scratch, bin};

use std::path::{Path, PathBuf};
use std::process::Command;

use runner::export::json::{results_file, to_bytes};
use runner::results::schema::{CellResult, ResultsFile};
use runner::results::store::{Store, read_json};
use runner::results::summary::summarize_cell;

const OLD: &str = "results/2026-11-30T14-06-29Z-14f462b";
const NEW: &str = "results/2026-11-30T14-14-58Z-14f462b";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn matrix(cwd: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(bin("matrix"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("matrix runs");
    assert!(
        out.status.success(),
        "matrix {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn assert_same(what: &str, got: &[u8], want: &[u8]) {
    if got != want {
        let first = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let from = first.saturating_sub(200);
        panic!(
            "{what} differs from the committed file at byte {first}:\n got: {}\nwant: {}",
            String::from_utf8_lossy(&got[from..(first + 200).min(got.len())]),
            String::from_utf8_lossy(&want[from..(first + 200).min(want.len())])
        );
    }
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn results_json_is_rebuilt_from_the_cell_files() {
    for run in [OLD, NEW] {
        let dir = repo().join(run);
        let committed: ResultsFile = read_json(&dir.join("results.json")).unwrap();
        let store = Store::open(&dir).unwrap();
        let summaries = committed
            .cells
            .iter()
            .map(|c| {
                let cell: CellResult = store.read_cell(&c.key).expect("cell file");
                summarize_cell(&cell)
            })
            .collect();
        let rebuilt = results_file(
            &committed.run_id,
            committed.status,
            summaries,
            committed.drift.clone(),
        );
        // The drift record is not in the cell files: it comes back from results.json itself,
        // through serde_json's default float parser, which may be one ULP off. So the cells are
        // compared byte for byte and the drift record as parsed JSON.
        let (got, want) = (to_bytes(&rebuilt), read(&dir.join("results.json")));
        let split = |b: &[u8]| {
            let at = b
                .windows(11)
                .position(|w| w == b"\n  \"drift\":")
                .expect("results.json has a drift key");
            let tail: serde_json::Value =
                serde_json::from_slice(&[b"{".as_slice(), &b[at + 1..]].concat()).unwrap();
            (b[..at].to_vec(), tail)
        };
        let ((got_cells, mut got_drift), (want_cells, want_drift)) = (split(&got), split(&want));
        assert_same(&format!("{run}/results.json"), &got_cells, &want_cells);
        // The metric definitions are written with results.json from the runner's table, not
        // rebuilt from the cells; these runs were recorded before results.json carried them.
        let table = got_drift.as_object_mut().and_then(|o| o.remove("metrics"));
        assert_eq!(
            table,
            Some(serde_json::to_value(runner::results::metric::DEFINITIONS).unwrap())
        );
        assert_eq!(got_drift, want_drift, "{run}/results.json: drift");
    }
}

/// A scratch copy of the repo's results/, README.md and docs/, so `matrix report` and
/// `matrix compare --readme` can rewrite them.
fn scratch(name: &str) -> Scratch {
    let d = Scratch::new(&format!("regenerate-{name}"));
    let status = Command::new("cp")
        .arg("-r")
        .arg(repo().join("results"))
        .arg(repo().join("README.md"))
        .arg(repo().join("docs"))
        .arg(&d.0)
        .status()
        .unwrap();
    assert!(status.success());
    d
}

/// Every committed matrix run (a directory under results/ with a run.json).
fn committed_runs() -> Vec<String> {
    let mut runs: Vec<String> = std::fs::read_dir(repo().join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("run.json").is_file())
        .map(|e| format!("results/{}", e.file_name().to_string_lossy()))
        .collect();
    runs.sort();
    runs
}

/// The text between `a` and the next `b` after it.
fn between<'t>(text: &'t str, a: &str, b: &str) -> Option<&'t str> {
    let from = text.find(a)? + a.len();
    Some(&text[from..from + text[from..].find(b)?])
}

#[test]
fn report_rewrites_results_md_and_plots_unchanged() {
    let d = scratch("report");
    for run in committed_runs() {
        let stdout = matrix(&d, &["report", &run]);
        let text = String::from_utf8(stdout).unwrap();
        let mut files = 0;
        for line in text.lines() {
            let Some(path) = line.strip_prefix("wrote ") else {
                continue;
            };
            let rel = Path::new(path);
            assert_same(path, &read(&d.join(rel)), &read(&repo().join(rel)));
            files += 1;
        }
        assert!(files >= 5, "{run}: only {files} files written:\n{text}");
    }
}

/// README's generated headline and the worked example in docs/reading-a-run.md come back
/// unchanged from the runs they name.
#[test]
fn readme_sections_regenerate_unchanged() {
    let d = scratch("readme");
    let readme = String::from_utf8(read(&repo().join("README.md"))).unwrap();
    let reference = between(
        &readme,
        "<!-- pingmatrix:reference:begin -->",
        "<!-- pingmatrix:reference:end -->",
    )
    .and_then(|s| between(s, "Run `", "`"))
    .expect("README's reference section names its run");
    matrix(
        &d,
        &[
            "report",
            &format!("results/{reference}"),
            "--readme",
            "README.md",
        ],
    );
    let example = String::from_utf8(read(&repo().join(EXAMPLE))).unwrap();
    let compare = between(
        &example,
        "<!-- pingmatrix:compare:begin -->",
        "<!-- pingmatrix:compare:end -->",
    )
    .expect("docs/reading-a-run.md has a compare section");
    let old = between(compare, "old run ", " ").expect("compare section names the old run");
    let new = between(compare, "new run ", " ").expect("compare section names the new run");
    matrix(
        &d,
        &[
            "compare",
            &format!("results/{old}"),
            &format!("results/{new}"),
            "--format",
            "markdown",
            "--readme",
            EXAMPLE,
        ],
    );
    for file in ["README.md", EXAMPLE] {
        assert_same(file, &read(&d.join(file)), &read(&repo().join(file)));
    }
}

/// Where the generated compare section (the worked example) lives.
const EXAMPLE: &str = "docs/reading-a-run.md";

#[test]
fn compare_output_unchanged_in_every_format() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    for (args, file) in [
        (
            vec![OLD, NEW, "--format", "terminal"],
            "compare-terminal.out",
        ),
        (
            vec![OLD, NEW, "--format", "markdown"],
            "compare-markdown.out",
        ),
        (vec![OLD, NEW, "--format", "json"], "compare-json.out"),
        (
            vec![NEW, OLD, "--format", "terminal"],
            "compare-reverse-terminal.out",
        ),
    ] {
        let mut all = vec!["compare"];
        all.extend(args);
        assert_same(file, &matrix(&repo(), &all), &read(&golden.join(file)));
    }
}

/// The site builds from the committed results/: an index that lists every run, one compare
/// script per pair of runs beside it (none embedded in the index), and each run's page
/// byte-identical to the one committed beside its results.json.
#[test]
fn site_builds_from_results_and_its_run_pages_are_the_committed_ones() {
    let d = Scratch::new("regenerate-site");
    let out = d.join("site");
    let stdout = matrix(
        &repo(),
        &["site", "results", "--out", out.to_str().unwrap()],
    );
    let text = String::from_utf8(stdout).unwrap();
    let runs = committed_runs();
    assert!(text.contains(&format!("({} runs", runs.len())), "{text}");
    let index = String::from_utf8(read(&out.join("index.html"))).unwrap();
    assert!(
        !index.contains("\"comparison\""),
        "a compare pair in the index"
    );
    let pair_scripts = std::fs::read_dir(out.join("compare"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "js")
        })
        .count();
    assert_eq!(pair_scripts, runs.len() * (runs.len() - 1) / 2);
    for run in &runs {
        let id = run.trim_start_matches("results/");
        assert!(
            index.contains(&format!("\"page\":\"./{id}/index.html\"")),
            "{id} not in the index"
        );
        assert_same(
            &format!("site page of {run}"),
            &read(&out.join(id).join("index.html")),
            &read(&repo().join(run).join("index.html")),
        );
    }
}

/// A directory without result sets is bad input: exit 2 with a reason, nothing written.
#[test]
fn site_refuses_a_directory_without_result_sets() {
    let d = Scratch::new("regenerate-site-empty");
    let empty = d.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    for input in [empty.clone(), d.join("no-such-dir")] {
        let out = Command::new(bin("matrix"))
            .args(["site", input.to_str().unwrap(), "--out"])
            .arg(d.join("out"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", input.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("result set") || err.contains("no such"),
            "{err}"
        );
        assert!(!d.join("out").join("index.html").exists());
    }
}
