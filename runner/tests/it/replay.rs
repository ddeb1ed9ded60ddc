//! `matrix run --fake-reps RUN_DIR` (hidden): a committed run replayed from its recorded
//! repetitions through the real schedule, summaries, verdicts and pages, with no service
//! started. The counted reference run, replayed, summarises every cell and decides every
//! verdict and calibration exactly as the run did, and its run.json and results.md say that
//! nothing was measured.

use std::path::Path;
use std::process::Command;

use crate::support::live::{Scratch, bin, only_run_dir, out_text, read};
use runner::results::schema::RunRecord;

const RUN: &str = "results/2026-12-04T06-33-17Z-7357b8a";

#[test]
fn a_committed_run_replayed_from_its_repetitions_ends_as_the_run_did() {
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(RUN);
    let d = Scratch::new("replay");
    let o = Command::new(bin("matrix"))
        .args(["run", "--quiet", "--config"])
        .arg(recorded.join("matrix.toml"))
        .arg("--fake-reps")
        .arg(&recorded)
        .arg("--out")
        .arg(&d.0)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let run_dir = only_run_dir(&d.0);
    let then: serde_json::Value = read(&recorded.join("results.json"));
    let now: serde_json::Value = read(&run_dir.join("results.json"));
    let cells = |v: &serde_json::Value| v["cells"].as_array().unwrap().clone();
    assert_eq!(cells(&now).len(), cells(&then).len());
    for (a, b) in cells(&then).iter().zip(cells(&now).iter()) {
        assert_eq!(a, b, "cell {} summarised differently", a["key"]);
    }
    for field in [
        "verdicts",
        "calibration",
        "failed_cells",
        "suspect_cells",
        "baseline",
    ] {
        assert_eq!(then[field], now[field], "{field}");
    }
    // The drift re-runs are not in the cell files: the replay's drift says they failed.
    assert!(
        now["drift"].to_string().contains("--fake-reps"),
        "{}",
        now["drift"]
    );
    let run: RunRecord = read(&run_dir.join("run.json"));
    assert!(
        run.environment.provenance_warnings[0].contains("nothing was measured"),
        "{:?}",
        run.environment.provenance_warnings
    );
    assert!(run.floors.is_none(), "a replay measures no floors");
    let md = std::fs::read_to_string(run_dir.join("results.md")).unwrap();
    assert!(md.contains("nothing was measured in this run"));
}
