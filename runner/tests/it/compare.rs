//! `matrix compare` on synthetic result sets with known answers: a 10 % shift is called,
//! noise is not, incomparable runs are refused (or forced, and then labelled), one-sided
//! cells are listed, suspect cells are marked, and the Markdown table is stable.

use crate::support::fixtures;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use crate::support::live::Scratch;
use fixtures::*;
use runner::compare::model::Comparison;
use runner::compare::{Options, compare, export};
use runner::results::difference::Verdict;
use runner::results::metric::{self, Metric};
use runner::results::set::load;

const OPT: Options = Options {
    noise_pct: 2.0,
    force: false,
};

fn verdicts(c: &Comparison, service: &str, m: Metric) -> Vec<Verdict> {
    c.cells
        .iter()
        .filter(|x| x.id.service == service)
        .flat_map(|x| {
            x.metrics
                .iter()
                .filter(|y| y.metric == m)
                .map(|y| y.verdict)
        })
        .collect()
}

fn base(s: &str, c: u32) -> Perf {
    Perf::new(base_rps(s, c))
}

#[test]
fn ten_percent_slower_with_low_noise_is_called_and_others_are_not() {
    let d = Scratch::new("ten-pct");
    let old = write_run(&d, "old", &MACHINE, &matrix(5, base));
    let new = write_run(
        &d,
        "new",
        &MACHINE,
        &matrix(5, |s, c| {
            let p = base(s, c).seed(2);
            if s == "ping-tokio-hyper" {
                p.worse(1.10)
            } else {
                p
            }
        }),
    );
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    assert_eq!(c.cells.len(), 6);
    for m in metric::ALL {
        assert_eq!(
            verdicts(&c, "ping-tokio-hyper", m),
            [Verdict::Worse; 2],
            "{m:?}"
        );
        for other in ["ping-monoio", "ping-may-minihttp"] {
            assert_eq!(
                verdicts(&c, other, m),
                [Verdict::NoChange; 2],
                "{other} {m:?}"
            );
        }
    }
    let rps = &c.cells[0].metrics[0];
    assert_eq!(rps.verdict.word(rps.metric), "slower");
    let d = rps.difference.as_ref().unwrap();
    assert!((d.ratio - 1.0 / 1.1).abs() < 1e-9, "{}", d.ratio);
    let (lo, hi) = (d.ci95_low_pct.unwrap(), d.ci95_high_pct.unwrap());
    assert!(
        lo < d.change_pct && d.change_pct < hi && hi < -2.0,
        "{lo} {hi}"
    );
    // --fail-on-regression semantics: 9.1 % req/s drop (10 % on the others) is caught at 5,
    // not at 15.
    assert!(!c.regressions(5.0).is_empty());
    assert!(c.regressions(15.0).is_empty());
}

#[test]
fn identical_distributions_are_no_change() {
    let d = Scratch::new("identical");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    // Same values in another order: same mean, same spread.
    let new = write_run(&d, "new", &MACHINE, &matrix(3, |s, c| base(s, c).seed(1)));
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    assert_eq!(c.count(Verdict::Better) + c.count(Verdict::Worse), 0);
    assert_eq!(c.count(Verdict::NoChange), 6 * 7);
    assert!(!c.forced && c.only_old.is_empty() && c.only_new.is_empty());
}

#[test]
fn different_hardware_is_refused_unless_forced() {
    let d = Scratch::new("hardware");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let other = Machine {
        cpu_model: "Intel Xeon Gold 5120",
        logical_cpus: 4,
        loadgen_version: "loadgen 0.2.0",
        loadgen_identity: Some("loadgen 0.2.0 src=00aa00aa00aa00aa deps=11bb11bb11bb11bb"),
    };
    let new = write_run(&d, "new", &other, &matrix(3, base));
    let (o, n) = (load(&old).unwrap(), load(&new).unwrap());
    let err = compare(&o, &n, OPT).unwrap_err().to_string();
    for want in [
        "CPU model differs",
        "logical CPUs differs",
        "load generator method differs: version 0.1.0 vs 0.2.0",
        "--force",
    ] {
        assert!(err.contains(want), "missing {want:?} in: {err}");
    }
    let c = compare(&o, &n, Options { force: true, ..OPT }).unwrap();
    assert!(c.forced);
    let md = export::markdown::render(&c);
    assert!(md.contains("**Forced comparison (`--force`)**"), "{md}");
    assert!(
        md.contains("CPU model differs: AMD EPYC 7B13 vs Intel Xeon Gold 5120"),
        "{md}"
    );
    assert!(export::terminal::render(&c, false).contains("FORCED (--force)"));
}

#[test]
fn a_cell_run_differently_gets_no_verdict() {
    let d = Scratch::new("cell-pinning");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let mut cells = matrix(3, |s, c| base(s, c).worse(1.2));
    cells[0].0.limits.server_cpus = vec![1];
    cells[0].0.limits.loadgen_cpus = vec![0];
    let new = write_run(&d, "new", &MACHINE, &cells);
    let (o, n) = (load(&old).unwrap(), load(&new).unwrap());
    let c = compare(&o, &n, OPT).unwrap();
    assert!(c.cells[0].not_comparable[0].starts_with("pinning differs"));
    assert!(
        c.cells[0]
            .metrics
            .iter()
            .all(|m| m.verdict == Verdict::NotComparable)
    );
    // The other cells are still judged (20 % worse everywhere).
    assert!(
        c.cells[1]
            .metrics
            .iter()
            .all(|m| m.verdict == Verdict::Worse)
    );
    let forced = compare(&o, &n, Options { force: true, ..OPT }).unwrap();
    assert!(forced.forced);
    assert_eq!(forced.cells[0].metrics[0].verdict, Verdict::Worse);
}

#[test]
fn cells_on_one_side_only_are_listed() {
    let d = Scratch::new("one-sided");
    let mut old_cells = matrix(3, base);
    old_cells.push((
        spec("ping-monoio", "ping", closed(256), "pinned", 3),
        base("ping-monoio", 256),
    ));
    let mut new_cells = matrix(3, base);
    new_cells.push((
        spec("hello-monoio", "ping", closed(16), "pinned", 3),
        base("ping-monoio", 16),
    ));
    let old = write_run(&d, "old", &MACHINE, &old_cells);
    let new = write_run(&d, "new", &MACHINE, &new_cells);
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    assert_eq!(c.cells.len(), 6);
    assert_eq!(c.only_old.len(), 1);
    assert_eq!(
        c.only_old[0].to_string(),
        "ping-monoio · ping · c256 · pinned"
    );
    assert_eq!(
        c.only_new[0].to_string(),
        "hello-monoio · ping · c16 · pinned"
    );
    let md = export::markdown::render(&c);
    assert!(
        md.contains("Only in old: `ping-monoio · ping · c256 · pinned`."),
        "{md}"
    );
    assert!(
        md.contains("Only in new: `hello-monoio · ping · c16 · pinned`."),
        "{md}"
    );
}

#[test]
fn suspect_cells_are_marked_not_hidden() {
    let d = Scratch::new("suspect");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(
        &d,
        "new",
        &MACHINE,
        &matrix(3, |s, c| {
            let mut p = base(s, c);
            if s == "ping-monoio" && c == 16 {
                p.noise = 0.08; // req/s CV above the runner's 5 % limit
            }
            p
        }),
    );
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    let cell = c
        .cells
        .iter()
        .find(|x| x.key == "ping-monoio__ping__c16__pinned")
        .unwrap();
    assert!(cell.suspect_new && !cell.suspect_old);
    assert!(
        cell.suspect_reasons
            .iter()
            .any(|r| r.starts_with("new: req/s CV")),
        "{:?}",
        cell.suspect_reasons
    );
    let md = export::markdown::render(&c);
    assert!(
        md.contains("| ping-monoio · ping · c16 · pinned ⚠ suspect (new) | req/s |"),
        "{md}"
    );
    assert!(md.contains("Suspect, failed or not comparable cells:"));
}

#[test]
fn a_failed_cell_is_marked_and_has_no_verdicts() {
    let d = Scratch::new("failed-cell");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    let mut n = load(&new).unwrap();
    let key = n.results.cells[1].key.clone();
    {
        let s = &mut n.results.cells[1];
        s.status = Some(runner::results::schema::CellStatus::Failed);
        s.failure = Some("verify: /ping answered 500".into());
        s.requests_per_s = None;
        s.latency = None;
        s.startup_us = None;
        s.idle_rss_bytes = None;
        s.rss_peak_bytes = None;
        s.server_cpu_us_per_request = None;
    }
    n.cells.remove(&key);
    let c = compare(&load(&old).unwrap(), &n, OPT).unwrap();
    let cell = c.cells.iter().find(|x| x.key == key).unwrap();
    assert_eq!(cell.failures, ["new: failed (verify: /ping answered 500)"]);
    assert!(cell.metrics.iter().all(|m| m.verdict == Verdict::Missing));
    let md = export::markdown::render(&c);
    assert!(
        md.contains("c64 · pinned ✗ not ok | req/s | 66.0k | – |"),
        "{md}"
    );
    assert!(md.contains("new: failed (verify: /ping answered 500)"));
}

#[test]
fn results_json_alone_falls_back_to_summaries() {
    let d = Scratch::new("summary-only");
    let old = write_run(&d, "old", &MACHINE, &matrix(5, base));
    let new = write_run(
        &d,
        "new",
        &MACHINE,
        &matrix(5, |s, c| base(s, c).worse(1.1)),
    );
    std::fs::remove_dir_all(old.join("cells")).unwrap();
    std::fs::remove_dir_all(new.join("cells")).unwrap();
    let c = compare(
        &load(&old.join("results.json")).unwrap(),
        &load(&new.join("results.json")).unwrap(),
        OPT,
    )
    .unwrap();
    // Mean/stdev/n are in results.json for req/s: still a real test.
    assert_eq!(
        verdicts(&c, "ping-monoio", Metric::RequestsPerS),
        [Verdict::Worse; 2]
    );
    // Only medians are kept for percentiles: no interval, no verdict.
    assert_eq!(
        verdicts(&c, "ping-monoio", Metric::LatencyP99Us),
        [Verdict::Undetermined; 2]
    );
}

/// One service, one cell, a 10 % drop: the Markdown table, character for character.
#[test]
fn markdown_snapshot() {
    let d = Scratch::new("snapshot");
    let one = |f: f64, seed| {
        vec![(
            spec("ping-tokio-hyper", "ping", closed(64), "pinned", 5),
            Perf::new(60_000.0).worse(f).seed(seed),
        )]
    };
    let old = write_run(&d, "2026-01-01T00-00-00Z", &MACHINE, &one(1.0, 0));
    let new = write_run(&d, "2026-02-01T00-00-00Z", &MACHINE, &one(1.1, 2));
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    let got = export::markdown::render(&c);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compare-snapshot.md");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want =
        std::fs::read_to_string(&path).expect("snapshot file (UPDATE_SNAPSHOTS=1 writes it)");
    assert_eq!(
        got, want,
        "Markdown changed; review and re-run with UPDATE_SNAPSHOTS=1"
    );
}

/// `matrix compare <flags…> <old> <new>`, run to completion.
fn compare_cli(flags: &[&str], old: &Path, new: &Path) -> Output {
    run_matrix(
        ["compare"]
            .iter()
            .chain(flags)
            .map(OsStr::new)
            .chain([old.as_os_str(), new.as_os_str()]),
    )
}

#[test]
fn cli_exit_codes_formats_and_readme() {
    let d = Scratch::new("cli");
    let old = write_run(&d, "old", &MACHINE, &matrix(5, base));
    let new = write_run(
        &d,
        "new",
        &MACHINE,
        &matrix(5, |s, c| base(s, c).worse(1.1).seed(1)),
    );

    let out = compare_cli(&[], &old, &new);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("slower") && !text.contains('\x1b'), "{text}");

    let out = compare_cli(&["--fail-on-regression", "5"], &old, &new);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("regression: "));

    let out = compare_cli(&["--format", "json"], &old, &new);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["cells"][0]["metrics"][0]["verdict"], "worse");
    assert_eq!(v["noise_pct"], 2.0);

    // Refusal: exit 2 and a message naming the difference.
    let other = Machine {
        cpu_model: "Other CPU",
        ..MACHINE
    };
    let elsewhere = write_run(&d, "elsewhere", &other, &matrix(5, base));
    let out = compare_cli(&[], &old, &elsewhere);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to compare") && err.contains("CPU model differs"),
        "{err}"
    );
    let out = compare_cli(&["--force"], &old, &elsewhere);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FORCED"));

    // README section replaced between the markers, the rest untouched.
    let readme = d.join("README.md");
    let readme_flags = ["--format", "markdown", "--readme", readme.to_str().unwrap()];
    std::fs::write(
        &readme,
        "# x\n\n<!-- pingmatrix:compare:begin -->\nstale\n<!-- pingmatrix:compare:end -->\n\ntail\n",
    )
    .unwrap();
    let out = compare_cli(&readme_flags, &old, &new);
    assert_success(&out);
    let text = std::fs::read_to_string(&readme).unwrap();
    assert!(text.starts_with("# x\n\n<!-- pingmatrix:compare:begin -->\n"));
    assert!(text.ends_with("<!-- pingmatrix:compare:end -->\n\ntail\n"));
    assert!(
        text.contains("| ping-tokio-hyper · ping · c16 · pinned | req/s |")
            && !text.contains("stale")
    );

    // Missing markers: a clear error, file unchanged.
    std::fs::write(&readme, "# no markers\n").unwrap();
    let out = compare_cli(&readme_flags, &old, &new);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("<!-- pingmatrix:compare:begin --> not found")
            || String::from_utf8_lossy(&out.stderr)
                .contains("`<!-- pingmatrix:compare:begin -->` not found")
    );
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# no markers\n");

    // Bad input: clear errors, no panic.
    let out = compare_cli(&[], &d.join("nope"), &new);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such run directory"));
}

/// Rewrites a written run's results.json through `edit` and drops its cell files, so the
/// summaries are what compare reads.
fn edit_results(run: &Path, edit: impl FnOnce(&mut runner::results::schema::ResultsFile)) {
    let path = run.join("results.json");
    let mut res: runner::results::schema::ResultsFile =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut res);
    std::fs::write(&path, runner::export::json::to_bytes(&res)).unwrap();
    std::fs::remove_dir_all(run.join("cells")).unwrap();
}

/// The CI gate used to exit 0 for a candidate whose cells all failed, that had no cells, or
/// whose cells were run differently.
#[test]
fn the_gate_fails_a_candidate_it_cannot_judge() {
    use runner::results::schema::CellStatus;
    let d = Scratch::new("gate");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let stderr = |o: &Output| String::from_utf8_lossy(&o.stderr).into_owned();

    let failed = write_run(&d, "failed", &MACHINE, &matrix(3, base));
    edit_results(&failed, |r| {
        for c in &mut r.cells {
            c.status = Some(CellStatus::Failed);
            c.failure = Some("startup: no 200 within 1500 ms".into());
            c.requests_per_s = None;
            c.latency = None;
            c.server_cpu_us_per_request = None;
        }
    });
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &failed);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("6 cell(s) did not complete in the new run"));
    let out = compare_cli(
        &["--fail-on-regression", "5", "--allow-incomplete"],
        &old,
        &failed,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("ignored (--allow-incomplete)"));

    let empty = write_run(&d, "empty", &MACHINE, &matrix(3, base));
    edit_results(&empty, |r| r.cells.clear());
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &empty);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no cell of the new run matches"));

    let mut fewer = matrix(3, base);
    fewer.pop();
    let fewer = write_run(&d, "fewer", &MACHINE, &fewer);
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &fewer);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("1 cell(s) of the old run are missing"));

    // Cells run differently are refused (README: exit 2), gate or not, unless forced.
    let mut moved = matrix(3, base);
    moved[0].0.limits.server_cpus = vec![1];
    let moved = write_run(&d, "moved", &MACHINE, &moved);
    for flags in [&[][..], &["--fail-on-regression", "5"][..]] {
        let out = compare_cli(flags, &old, &moved);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("was run differently (pinning differs"));
    }
    let out = compare_cli(&["--force", "--fail-on-regression", "5"], &old, &moved);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A clean candidate still passes.
    let same = write_run(&d, "same", &MACHINE, &matrix(3, |s, c| base(s, c).seed(1)));
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &same);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// One repetition per cell gives no interval: nothing can be judged, and the gate used to
/// pass it ("14 without CI", exit 0).
#[test]
fn the_gate_fails_a_candidate_with_one_repetition_per_cell() {
    let d = Scratch::new("gate-n1");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let one = write_run(&d, "one", &MACHINE, &matrix(1, |s, c| base(s, c).seed(1)));
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &one);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("6 cell(s) cannot be judged"), "{err}");
    let out = compare_cli(
        &["--fail-on-regression", "5", "--allow-incomplete"],
        &old,
        &one,
    );
    assert_eq!(out.status.code(), Some(0));
    // Without the gate the comparison is shown as before.
    assert_eq!(compare_cli(&[], &old, &one).status.code(), Some(0));
}

/// A churn cell leaking 20 MiB per cycle used to compare as "no change" (only start-up and
/// idle RSS were compared) and pass the gate.
#[test]
fn churn_memory_takes_part_in_compare_and_the_gate() {
    let d = Scratch::new("churn-leak");
    let old = write_churn_run(&d, "old", 64 * 1024, 0);
    let same = write_churn_run(&d, "same", 64 * 1024, 1);
    let leak = write_churn_run(&d, "leak", 20 << 20, 1);
    let c = compare(&load(&old).unwrap(), &load(&leak).unwrap(), OPT).unwrap();
    assert_eq!(
        verdicts(&c, "svc", Metric::ChurnRssLastBytes),
        vec![Verdict::Worse]
    );
    let text = export::terminal::render(&c, false);
    assert!(text.contains("RSS after churn"), "{text}");
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &leak);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("RSS after churn"), "{err}");
    let c = compare(&load(&old).unwrap(), &load(&same).unwrap(), OPT).unwrap();
    assert_eq!(
        verdicts(&c, "svc", Metric::ChurnRssLastBytes),
        vec![Verdict::NoChange]
    );
    let out = compare_cli(&["--fail-on-regression", "5"], &old, &same);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Issue 36, item 9: a run whose load generator ran on io_uring was judged against one whose
/// generator fell back to epoll without a word. Each side's cell files and results.json say
/// which backend ran; `matrix compare` withholds the verdicts of cells run on different I/O.
#[test]
fn cells_whose_generator_ran_on_different_io_get_no_verdict() {
    let d = Scratch::new("generator-io");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    let uring = serde_json::json!({"requested": "auto", "backend": "uring", "reason": "available",
        "receive": {"mode": "multishot", "reason": "kernel 6.10+"}});
    let epoll = serde_json::json!({"requested": "auto", "backend": "epoll",
        "reason": "io_uring_setup: Operation not permitted"});
    for (run, io) in [(&old, &uring), (&new, &epoll)] {
        let results = run.join("results.json");
        let mut res: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&results).unwrap()).unwrap();
        for c in res["cells"].as_array_mut().unwrap() {
            let file = run.join(format!("cells/{}.json", c["key"].as_str().unwrap()));
            let mut cell: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
            for r in cell["reps"].as_array_mut().unwrap() {
                r["report"]["generator"]["io"] = io.clone();
            }
            std::fs::write(&file, serde_json::to_vec_pretty(&cell).unwrap()).unwrap();
            let parsed: runner::results::schema::CellResult = serde_json::from_value(cell).unwrap();
            *c = serde_json::to_value(runner::results::summary::summarize_cell(&parsed)).unwrap();
        }
        std::fs::write(&results, serde_json::to_vec_pretty(&res).unwrap()).unwrap();
    }
    let out = run_matrix([OsStr::new("compare"), old.as_os_str(), new.as_os_str()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("load generator I/O differs: io_uring (multishot) vs epoll"),
        "{text}"
    );
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).unwrap();
    assert_eq!(c.count(Verdict::Better) + c.count(Verdict::Worse), 0);
    assert_eq!(c.count(Verdict::NoChange), 0);
}
