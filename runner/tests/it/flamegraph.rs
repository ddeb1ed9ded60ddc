//! End-to-end `matrix run --flamegraph` and `matrix report --diff-flamegraph`: the real
//! `matrix`, `loadgen` and `ping-tokio-hyper` binaries on a tiny matrix with 1 s windows
//! (`cargo build --workspace --bins` first). Tests that need perf skip loudly where it is
//! missing or refused; the "perf not available" path runs everywhere.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::live;

use live::{Scratch, bin, out_text, read, tiny_matrix};
use runner::profile::{Perf, Profile};
use runner::results::schema::{CellResult, CellStatus, FlamegraphProbe, ResultsFile, RunRecord};

const REPS: u32 = 2;

/// One service, two cells (closed and open loop), server and generator on different CPUs.
fn write_matrix(dir: &Path) -> PathBuf {
    // 1 s windows, not the kit's 250 ms: perf is enabled only once it has acknowledged, and
    // on a loaded 2-core machine that took over 200 ms, leaving the recording 26 ms and
    // no samples.
    let text = tiny_matrix(&[("hyper", bin("ping-tokio-hyper"), "")], REPS, "", "")
        .replace("duration_ms = 250", "duration_ms = 1000");
    let p = dir.join("m.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// inferno's SVGs carry a DOCTYPE, which roxmltree refuses unless told.
fn parse_svg(text: &str) -> roxmltree::Document<'_> {
    let opt = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, opt).expect("valid SVG")
}

/// `matrix run --flamegraph` into a fresh `out`; returns the run directory.
fn run_flamegraph(m: &Path, out: &Path, perf_env: Option<&str>) -> PathBuf {
    // Short windows: sample faster than the default 499 Hz so that the open-loop cell (a
    // mostly idle server) gets samples too. Inlined frames left in their callers: resolving
    // them in these debug builds took perf script 20+ s a cell (binutils' addr2line).
    let mut c = live::matrix_at(
        m,
        out,
        &[
            "run",
            "--flamegraph",
            "--flamegraph-hz",
            "1999",
            "--flamegraph-no-inline",
            "--quiet",
        ],
    );
    if let Some(p) = perf_env {
        c.env(runner::flamegraph::PERF_ENV, p);
    }
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    live::only_run_dir(out)
}

fn cells(run_dir: &Path) -> Vec<CellResult> {
    let results: ResultsFile = read(&run_dir.join("results.json"));
    assert_eq!(results.cells.len(), 2);
    results
        .cells
        .iter()
        .map(|s| read(&run_dir.join("cells").join(format!("{}.json", s.key))))
        .collect()
}

fn perf_or_skip(test: &str) -> bool {
    match Perf::probe() {
        Ok(_) => true,
        Err(na) => {
            eprintln!("SKIPPED {test}: perf {na}");
            false
        }
    }
}

/// Checks one profiled run: an SVG per cell with the service's frames, the profiled
/// repetition kept out of `reps` and the summary, results.md linking every SVG.
fn check_profiled_run(run_dir: &Path) {
    let run: RunRecord = read(&run_dir.join("run.json"));
    let Some(FlamegraphProbe::Available { event, .. }) = &run.flamegraph else {
        panic!("run.json: {:?}", run.flamegraph);
    };
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(md.contains("## Flame graphs"), "{md}");
    for c in cells(run_dir) {
        assert_eq!(c.status, CellStatus::Ok, "{:?}", c.failure);
        // The measured repetitions only: the profiled one is apart.
        assert_eq!(c.reps.len(), REPS as usize);
        assert!(c.reps.iter().all(|r| r.rep <= REPS));
        assert_eq!(c.summary.n, REPS);
        let fg = c.flamegraph.as_ref().expect("cell.flamegraph");
        assert!(fg.profiled);
        assert_eq!(fg.rep, REPS + 1);
        assert!(fg.error.is_none(), "{}: {:?}", c.cell.key, fg.error);
        let profiled = fg
            .result
            .as_ref()
            .expect("the profiled repetition's result");
        assert!(profiled.report.requests_per_s > 0.0);
        let Some(Profile::Recorded(rec)) = &fg.profile else {
            panic!("{}: {:?}", c.cell.key, fg.profile);
        };
        assert_eq!(&rec.event, event);
        assert!(rec.samples.unwrap_or(0) > 0, "{rec:?}");
        assert!(rec.perf_version.starts_with("perf version"));
        // Paths relative to the run directory, files named after the cell.
        let svg_rel = rec.svg.as_ref().expect("an SVG");
        assert_eq!(
            svg_rel,
            &Path::new("flamegraphs").join(format!("{}.svg", c.cell.key))
        );
        let svg = std::fs::read_to_string(run_dir.join(svg_rel)).unwrap();
        let doc = parse_svg(&svg);
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        // Frames of the service binary (its own code, or hyper/tokio linked into it).
        let folded = std::fs::read_to_string(run_dir.join(&rec.folded)).unwrap();
        assert!(
            ["ping_tokio_hyper", "hyper::", "tokio::"]
                .iter()
                .any(|f| folded.contains(f)),
            "no service frames in {folded}"
        );
        // results.md links the SVG and shows the profiled req/s.
        let link = format!("[svg]({})", svg_rel.display());
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| `{}`", c.cell.key)) && l.contains("[svg]"))
            .unwrap_or_else(|| panic!("no row for {} in\n{md}", c.cell.key));
        assert!(row.contains(&link), "{row}");
        assert!(
            row.contains(&format!("{:.0}", profiled.report.requests_per_s)),
            "{row}"
        );
    }
    // Every link in the section resolves.
    let section = &md[md.find("## Flame graphs").unwrap()..];
    for part in section.split("](").skip(1) {
        let target = &part[..part.find(')').unwrap()];
        assert!(run_dir.join(target).is_file(), "broken link {target}");
    }
}

#[test]
fn flamegraph_run_profiles_every_cell_and_diffs_two_runs() {
    // Beside other load tests, not alone: 1 s windows at 1999 Hz leave every cell samples
    // (it checks that there are some, and the service's frames, not how many).
    if !perf_or_skip("flamegraph_run_profiles_every_cell_and_diffs_two_runs") {
        return;
    }
    let d = Scratch::new("run");
    let m = write_matrix(&d.0);
    let a = run_flamegraph(&m, &d.0.join("a"), None);
    check_profiled_run(&a);
    // The run to diff against is a copy, not a second profiled run (40 s with the machine to
    // itself): what the diff computes is unit-tested (`profile::fold`); here, that it reads
    // two run directories, writes an SVG per cell and refuses profiles it cannot compare.
    let b_out = d.0.join("b");
    std::fs::create_dir_all(&b_out).unwrap();
    let st = Command::new("cp")
        .arg("-R")
        .arg(&a)
        .arg(&b_out)
        .status()
        .unwrap();
    assert!(st.success());
    let b = live::only_run_dir(&b_out);
    check_profiled_run(&b);

    // `matrix report` keeps the section (results.md regenerated with plots).
    let o = Command::new(bin("matrix"))
        .arg("report")
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let md = std::fs::read_to_string(b.join("results.md")).unwrap();
    assert!(
        md.contains("## Flame graphs") && md.contains("](plots/"),
        "{md}"
    );
    assert!(
        md.contains("Inlined functions are not frames of their own (`--flamegraph-no-inline`)"),
        "{md}"
    );
    let run: RunRecord = read(&b.join("run.json"));
    assert!(
        matches!(
            run.flamegraph,
            Some(FlamegraphProbe::Available {
                inline_frames: false,
                ..
            })
        ),
        "{:?}",
        run.flamegraph
    );

    let diff = |old: &Path, new: &Path| {
        Command::new(bin("matrix"))
            .args(["report", "--diff-flamegraph"])
            .arg(old)
            .arg(new)
            .output()
            .unwrap()
    };
    let o = diff(&a, &b);
    assert!(o.status.success(), "{}", out_text(&o));
    for c in cells(&b) {
        let p = b
            .join("flamegraphs")
            .join(format!("{}.diff.svg", c.cell.key));
        let svg = std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), out_text(&o)));
        let doc = parse_svg(&svg);
        assert_eq!(doc.root_element().tag_name().name(), "svg");
    }

    // A different perf event in the old run: refused, nothing written for that cell.
    let key = cells(&a)[0].cell.key.clone();
    let cell_path = a.join("cells").join(format!("{key}.json"));
    let mut c: CellResult = read(&cell_path);
    if let Some(Profile::Recorded(r)) = c.flamegraph.as_mut().and_then(|f| f.profile.as_mut()) {
        r.event = format!("{}-other", r.event);
    }
    std::fs::write(&cell_path, serde_json::to_vec(&c).unwrap()).unwrap();
    let diff_svg = b.join("flamegraphs").join(format!("{key}.diff.svg"));
    std::fs::remove_file(&diff_svg).unwrap();
    let o = diff(&a, &b);
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("perf events differ") && err.contains(&key),
        "{err}"
    );
    assert!(!diff_svg.exists());
}

#[test]
fn without_perf_the_run_goes_on_and_says_why() {
    let d = Scratch::new("noperf");
    let m = d.0.join("m.toml");
    let text = tiny_matrix(&[("hyper", bin("ping-tokio-hyper"), "")], REPS, "", "");
    std::fs::write(&m, text).unwrap();
    let missing = d.0.join("no-such-perf");
    let run_dir = run_flamegraph(&m, &d.0.join("out"), Some(missing.to_str().unwrap()));
    let run: RunRecord = read(&run_dir.join("run.json"));
    let Some(FlamegraphProbe::NotAvailable { reason }) = &run.flamegraph else {
        panic!("run.json: {:?}", run.flamegraph);
    };
    assert!(reason.contains("no-such-perf"), "{reason}");
    for c in cells(&run_dir) {
        assert_eq!(c.status, CellStatus::Ok, "{:?}", c.failure);
        assert_eq!(c.reps.len(), REPS as usize);
        let fg = c.flamegraph.as_ref().expect("cell.flamegraph");
        assert!(fg.result.is_none(), "no profiled repetition without perf");
        assert!(
            matches!(&fg.profile, Some(Profile::NotAvailable(na)) if na.reason == *reason),
            "{:?}",
            fg.profile
        );
    }
    assert!(!run_dir.join("flamegraphs").exists());
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(
        md.contains("## Flame graphs") && md.contains(&format!("perf not available: {reason}")),
        "{md}"
    );
    // Nothing to diff: an error, not a crash.
    let o = Command::new(bin("matrix"))
        .args(["report", "--diff-flamegraph"])
        .arg(&run_dir)
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no cell has a recorded flame graph"),
        "{}",
        out_text(&o)
    );
}

/// `--resume` used to skip a cell whose measured repetitions were all on disk when the run
/// was interrupted, so its profiled repetition (which runs after them) never ran:
/// `"flamegraph": null`, and results.md did not mention the cell.
#[test]
fn resume_runs_a_missing_profiled_repetition_and_results_md_names_a_cell_without_one() {
    // No perf runs here (its path is missing), so no samples to starve: the kit's 250 ms
    // windows and a busy machine do.
    let d = Scratch::new("fg-resume");
    let m = d.0.join("m.toml");
    let text = tiny_matrix(&[("hyper", bin("ping-tokio-hyper"), "")], REPS, "", "");
    std::fs::write(&m, text).unwrap();
    let missing = d.0.join("no-such-perf");
    let perf = missing.to_str().unwrap();
    let run_dir = run_flamegraph(&m, &d.0.join("out"), Some(perf));
    let all = cells(&run_dir);
    let (a, b) = (&all[0], &all[1]);
    // The state an interrupt right after a's measured repetitions leaves.
    let a_path = run_dir.join("cells").join(format!("{}.json", a.cell.key));
    let mut cut = a.clone();
    cut.flamegraph = None;
    std::fs::write(&a_path, serde_json::to_vec(&cut).unwrap()).unwrap();
    let o = Command::new(bin("matrix"))
        .args(["run", "--quiet", "--resume"])
        .arg(&run_dir)
        .env(runner::flamegraph::PERF_ENV, perf)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", out_text(&o));
    let resumed: CellResult = read(&a_path);
    assert!(
        resumed.flamegraph.is_some(),
        "no profiled repetition on resume"
    );
    assert_eq!(resumed.reps, a.reps, "its measured repetitions are kept");
    let other: CellResult = read(&run_dir.join("cells").join(format!("{}.json", b.cell.key)));
    assert_eq!(other.reps, b.reps, "a finished cell is not run again");

    // A run with perf whose cell holds no profiled repetition: results.md names the cell.
    std::fs::write(&a_path, serde_json::to_vec(&cut).unwrap()).unwrap();
    let run_path = run_dir.join("run.json");
    let mut run: serde_json::Value = read(&run_path);
    run["flamegraph"] = serde_json::json!({
        "status": "available", "perf_version": "perf version 6.1", "event": "cpu-clock",
        "hardware_counters": false, "perf_event_paranoid": 2,
        "call_graph": {"method": "dwarf", "stack_bytes": 8192}, "frequency_hz": 1999
    });
    std::fs::write(&run_path, run.to_string()).unwrap();
    let o = Command::new(bin("matrix"))
        .arg("report")
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(
        md.contains(&format!(
            "**Without a flame graph** (no profiled repetition ran): `{}`",
            a.cell.key
        )),
        "{md}"
    );
}
