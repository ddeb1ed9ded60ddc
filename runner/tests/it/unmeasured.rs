//! A repetition that measured nothing fails its cell: a generator that never established a
//! connection (loadgen exit 1), and a window in which no request completed (the service
//! is still busy with the warm-up's requests). Both used to be "ok" cells with 0 req/s and
//! 0 µs latency, and the run exited 0.

use crate::support::live;

use live::{
    Scratch, bin, matrix_at, only_run_dir, out_text, read, script, tiny_matrix, write_config,
};
use runner::results::schema::{CellResult, CellStatus};

/// Runs `text` (ping scenario only) and returns the cell, results.md and the exit code.
fn run_ping(d: &Scratch, text: &str) -> (CellResult, String, Option<i32>) {
    let m = write_config(&d.0, text);
    let out = d.0.join("results");
    let o = matrix_at(&m, &out, &["run", "--quiet", "--only", "scenario=ping"])
        .output()
        .unwrap();
    let run = only_run_dir(&out);
    let cell: CellResult = read(&run.join("cells/a__ping__c4__pinned.json"));
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    eprintln!("{}", out_text(&o));
    (cell, md, o.status.code())
}

#[test]
fn a_generator_that_never_connected_fails_the_cell_and_the_run() {
    let d = Scratch::new("noconn");
    // The spec's URL pointed at a port nobody listens on: every connect is refused.
    let wrap = script(
        &d.0,
        "loadgen-elsewhere",
        &format!(
            "sed -i 's#127.0.0.1:[0-9]*#127.0.0.1:1#' \"$2\"\nexec {} \"$@\"",
            bin("loadgen").display()
        ),
    );
    let text = tiny_matrix(&[("a", bin("ping-tokio-hyper"), "")], 1, "", "").replace(
        &format!("loadgen = \"{}\"", bin("loadgen").display()),
        &format!("loadgen = \"{}\"", wrap.display()),
    );
    let (cell, md, code) = run_ping(&d, &text);
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.as_ref().unwrap().reason.clone();
    assert!(why.contains("no connection was established"), "{why}");
    assert!(cell.reps.is_empty(), "an unmeasured repetition was kept");
    assert!(md.contains("no connection was established"), "{md}");
    assert_eq!(code, Some(1));
}

#[test]
fn a_window_in_which_no_request_completed_fails_the_cell_and_the_run() {
    let d = Scratch::new("noreq");
    // Each request takes 1 s of CPU: the warm-up's requests outlast the 250 ms window.
    let text = tiny_matrix(
        &[("a", bin("ping-tokio-hyper"), r#""--burn-ns", "1000000000""#)],
        1,
        "",
        "",
    );
    let (cell, md, code) = run_ping(&d, &text);
    assert_eq!(cell.status, CellStatus::Failed);
    let why = cell.failure.as_ref().unwrap().reason.clone();
    assert!(why.contains("no request completed in the window"), "{why}");
    assert!(cell.reps.is_empty(), "an unmeasured repetition was kept");
    assert!(md.contains("no request completed in the window"), "{md}");
    assert!(!md.contains(" 0 µs") && !md.contains(" 0 req/s"), "{md}");
    assert_eq!(code, Some(1));
}
