//! A result set is untrusted input (people download, share and compare them), and a run
//! directory has one writer at a time: what is read from a result set never reaches a
//! command line as an option, a path outside its run, a link's scheme or the terminal as a
//! control sequence; results.json and the cell files cannot give two answers; two writers
//! of one run directory are refused; a run's page is never replaced by the site's index.

use crate::support::fixtures;
use crate::support::live::Scratch;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Output;

use fixtures::*;

fn base(_: &str, c: u32) -> Perf {
    Perf::new(10_000.0 * f64::from(c))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn edit_json(p: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

const KEY: &str = "ping-monoio__ping__c64__pinned";

/// Item 1: a run.json `git_commit` of `--output=<file>` reached `git diff` as an option
/// (the runs had no loadgen identity, so compare asked git), truncating the file; exit 0.
#[test]
fn a_recorded_commit_that_is_an_option_is_refused_and_no_file_is_touched() {
    let d = Scratch::new("untrusted-commit");
    let old_machine = Machine {
        loadgen_identity: None,
        ..MACHINE
    };
    let old = write_run(&d, "old", &old_machine, &matrix(3, base));
    let new = write_run(&d, "new", &old_machine, &matrix(3, base));
    let victim = d.join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    edit_json(&old.join("run.json"), |v| {
        v["environment"]["source"]["git_commit"] = format!("--output={}", victim.display()).into();
    });
    let out = run_matrix([OsStr::new("compare"), old.as_os_str(), new.as_os_str()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a commit hash"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
}

/// Item 2: run directories named `javascript:…`, or holding `#`, `?` or `%`, made script
/// URLs and broken links in the site's index.
#[test]
fn site_links_to_oddly_named_runs_are_relative_and_encoded() {
    let d = Scratch::new("untrusted-site-names");
    let results = d.join("results");
    std::fs::create_dir_all(&results).unwrap();
    write_run(&results, "javascript:alert(1)", &MACHINE, &matrix(3, base));
    write_run(&results, "a#b?c%d", &MACHINE, &matrix(3, base));
    let site = d.join("site");
    let out = run_matrix([
        OsStr::new("site"),
        results.as_os_str(),
        OsStr::new("--out"),
        site.as_os_str(),
    ]);
    assert_success(&out);
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        index.contains(r#""page":"./javascript%3Aalert%281%29/index.html""#),
        "no encoded link"
    );
    assert!(index.contains(r#""page":"./a%23b%3Fc%25d/index.html""#));
    assert!(!index.contains(r#""page":"javascript:"#));
    assert!(site.join("javascript:alert(1)/index.html").is_file());
    assert!(site.join("a#b?c%d/index.html").is_file());
}

/// Item 3: a cell key that is a path (`../..`, absolute) was joined to the run directory:
/// `report --diff-flamegraph` read and wrote outside the run; a cell's flame graph paths too.
#[test]
fn cell_keys_and_recorded_paths_that_leave_the_run_are_refused() {
    let d = Scratch::new("untrusted-keys");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    // The key climbs out of new/cells/ to d/evil.json, which holds the cell.
    let evil = "../../evil";
    std::fs::copy(new.join(format!("cells/{KEY}.json")), d.join("evil.json")).unwrap();
    edit_json(&new.join("results.json"), |v| {
        for c in v["cells"].as_array_mut().unwrap() {
            if c["key"] == KEY {
                c["key"] = evil.into();
            }
        }
    });
    let diff = |old: &Path, new: &Path| {
        run_matrix([
            OsStr::new("report"),
            new.as_os_str(),
            OsStr::new("--diff-flamegraph"),
            old.as_os_str(),
        ])
    };
    let out = diff(&old, &new);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a cell key"),
        "{}",
        stderr(&out)
    );
    assert!(!d.join("evil.diff.svg").exists());

    // A flame graph path outside the run, in a cell file.
    let other = write_run(&d, "other", &MACHINE, &matrix(3, base));
    edit_json(&other.join(format!("cells/{KEY}.json")), |v| {
        v["flamegraph"] = serde_json::json!({
            "rep": 4, "profiled": true, "result": null, "error": null,
            "profile": {
                "status": "recorded", "event": "cpu-clock", "hardware_counters": false,
                "call_graph": {"method": "dwarf", "stack_bytes": 8192}, "frequency_hz": 1999,
                "samples": 2, "weight": 7, "weight_unit": "ns", "stacks": 2,
                "perf_version": "perf version 6.1", "pid": 1, "window_s": 1.0,
                "folded": "/etc/passwd", "svg": "../x.svg", "perf_data": null
            }
        });
    });
    let out = diff(&old, &other);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not inside the run directory"),
        "{}",
        stderr(&out)
    );
}

/// Item 4: strings from a result set reached the terminal raw: an escape sequence in a
/// suspect reason could clear the screen or draw a fake verdict. Directory names in the
/// site's notes too.
#[test]
fn control_sequences_in_a_result_set_are_printed_as_visible_text() {
    let d = Scratch::new("untrusted-terminal");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    edit_json(&new.join("results.json"), |v| {
        for c in v["cells"].as_array_mut().unwrap() {
            c["suspect"] = true.into();
            c["suspect_reasons"] = serde_json::json!(["\u{1b}[2J\u{1b}[Hall better\r"]);
        }
    });
    std::fs::remove_dir_all(new.join("cells")).unwrap();
    let out = run_matrix([OsStr::new("compare"), old.as_os_str(), new.as_os_str()]);
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text:?}");
    assert!(text.contains("\\u{1b}[2J"), "{text}");

    // A directory whose name holds an escape and whose results.json does not parse.
    let results = d.join("results");
    std::fs::create_dir_all(results.join("bad\u{1b}[31m")).unwrap();
    std::fs::write(results.join("bad\u{1b}[31m/results.json"), "{").unwrap();
    write_run(&results, "good", &MACHINE, &matrix(3, base));
    let out = run_matrix([
        OsStr::new("site"),
        results.as_os_str(),
        OsStr::new("--out"),
        d.join("site").as_os_str(),
    ]);
    assert_success(&out);
    let err = stderr(&out);
    assert!(
        !err.contains('\u{1b}') && err.contains("bad\\u{1b}[31m"),
        "{err:?}"
    );
}

/// Item 10: after a cell file was edited, results.md showed the old mean while compare and
/// the page read the new one, and `--resummarize` kept the old verdicts.
#[test]
fn a_cell_file_edited_after_the_run_is_refused_until_resummarized() {
    let d = Scratch::new("untrusted-edited-cell");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let run = write_run(&d, "run", &MACHINE, &matrix(3, base));
    edit_json(&run.join(format!("cells/{KEY}.json")), |v| {
        for r in v["reps"].as_array_mut().unwrap() {
            let cpu = r["server"]["cpu_us_per_request"].as_f64().unwrap();
            r["server"]["cpu_us_per_request"] = (cpu * 3.0).into();
        }
    });
    for args in [
        vec![OsStr::new("report"), run.as_os_str()],
        vec![OsStr::new("compare"), old.as_os_str(), run.as_os_str()],
    ] {
        let out = run_matrix(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("does not summarise the cell files of") && err.contains(KEY),
            "{err}"
        );
        assert!(err.contains("--resummarize"), "{err}");
    }
    let out = run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--resummarize"),
    ]);
    assert_success(&out);
    let res: runner::results::schema::ResultsFile =
        serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap()).unwrap();
    let cell: runner::results::schema::CellResult =
        serde_json::from_slice(&std::fs::read(run.join(format!("cells/{KEY}.json"))).unwrap())
            .unwrap();
    let mean = |s: &runner::results::schema::CellSummary| {
        s.server_cpu_us_per_request.as_ref().unwrap().mean
    };
    let now = res.cells.iter().find(|c| c.key == KEY).unwrap();
    let from_cell = runner::results::summary::summarize_cell(&cell);
    assert!((mean(now) - mean(&from_cell)).abs() < 1e-9 * mean(&from_cell));
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(!md.is_empty());
    assert_success(&run_matrix([
        OsStr::new("compare"),
        old.as_os_str(),
        run.as_os_str(),
    ]));
}

/// Issue 47 item 12: `report --resummarize` of a cell holding huge finite values summed them to
/// infinity, wrote `null` over results.json and could not read it back: the old results.json
/// was gone and every later command on the run failed. The numbers are refused at load,
/// with their place, and results.json is left as it was.
#[test]
fn huge_numbers_in_a_cell_are_refused_and_results_json_is_kept() {
    let d = Scratch::new("untrusted-huge-numbers");
    let run = write_run(&d, "run", &MACHINE, &matrix(3, base));
    let before = std::fs::read(run.join("results.json")).unwrap();
    edit_json(&run.join(format!("cells/{KEY}.json")), |v| {
        for r in v["reps"].as_array_mut().unwrap() {
            r["server"]["cpu_us_per_request"] = 1.5e308.into();
        }
    });
    let out = run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--resummarize"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(KEY)
            && err.contains("server.cpu_us_per_request = ")
            && err.contains("out of range"),
        "{err}"
    );
    assert_eq!(std::fs::read(run.join("results.json")).unwrap(), before);
    // Once the cell is whole again the run reads as before.
    edit_json(&run.join(format!("cells/{KEY}.json")), |v| {
        for r in v["reps"].as_array_mut().unwrap() {
            r["server"]["cpu_us_per_request"] = 5.0.into();
        }
    });
    assert_success(&run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--resummarize"),
    ]));
    let res: runner::results::schema::ResultsFile =
        serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap()).unwrap();
    assert!(res.cells.iter().any(|c| c.key == KEY));
}

/// Item 11: every file was written through `<stem>.tmp`, so results.json and results.md
/// shared `results.tmp`; and nothing stopped two writers of one run directory.
#[test]
fn a_second_writer_of_a_run_directory_is_refused() {
    use runner::results::store::RunLock;
    let d = Scratch::new("untrusted-lock");
    let run = write_run(&d, "run", &MACHINE, &matrix(3, base));
    let held = RunLock::acquire(&run).unwrap();
    let refused = |args: &[&OsStr]| {
        let out = run_matrix(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("another matrix process"),
            "{args:?}: {}",
            stderr(&out)
        );
    };
    refused(&[OsStr::new("report"), run.as_os_str()]);
    refused(&[
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--resummarize"),
    ]);
    refused(&[OsStr::new("run"), OsStr::new("--resume"), run.as_os_str()]);
    assert!(!run.join("results.md").exists());
    drop(held);
    assert_success(&run_matrix([OsStr::new("report"), run.as_os_str()]));
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Item 12: `matrix site <one run dir> --out S` wrote the index over the run's page path,
/// linking to `/index.html`; with `--out` the run directory itself, the run's page was lost.
#[test]
fn site_of_one_run_puts_its_page_beside_the_index_and_never_over_it() {
    let d = Scratch::new("untrusted-site-one-run");
    let run = write_run(&d, "the-run", &MACHINE, &matrix(3, base));
    assert_success(&run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--html"),
    ]));
    let page = std::fs::read(run.join("index.html")).unwrap();
    let out = run_matrix([
        OsStr::new("site"),
        run.as_os_str(),
        OsStr::new("--out"),
        run.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("would replace the run's"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(run.join("index.html")).unwrap(), page);

    let site = d.join("site");
    assert_success(&run_matrix([
        OsStr::new("site"),
        run.as_os_str(),
        OsStr::new("--out"),
        site.as_os_str(),
    ]));
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(index.contains(r#""page":"./the-run/index.html""#));
    assert!(!index.contains(r#""page":"/index.html""#));
    assert_eq!(
        std::fs::read(site.join("the-run/index.html")).unwrap(),
        page
    );
}

/// Item 18: a write that failed at index.html exited 2 ("bad input") and left index.tmp.
#[test]
fn a_failed_write_is_an_io_failure_and_leaves_no_temp_file() {
    let d = Scratch::new("untrusted-write-fails");
    let run = write_run(&d, "run", &MACHINE, &matrix(3, base));
    // A non-empty directory where index.html goes: the rename over it fails.
    std::fs::create_dir_all(run.join("index.html/x")).unwrap();
    let out = run_matrix([OsStr::new("report"), run.as_os_str()]);
    assert_eq!(out.status.code(), Some(74), "{}", stderr(&out));
    assert!(stderr(&out).contains("writing"), "{}", stderr(&out));
    let leftovers: Vec<_> = std::fs::read_dir(&run)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
