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
    let id = RUN.trim_start_matches("results/");
    // Marked as a replay in results.json and in every cell (file and summary), not only in
    // run.json's warning; otherwise summarised as the run was.
    assert_eq!(now["replay_of"], id);
    for (a, b) in cells(&then).iter().zip(cells(&now).iter()) {
        let mut b = b.clone();
        let of = b.as_object_mut().unwrap().remove("replay_of");
        assert_eq!(of, Some(id.into()), "cell {} not marked", a["key"]);
        assert_eq!(*a, b, "cell {} summarised differently", a["key"]);
        let file: serde_json::Value = read(
            &run_dir
                .join("cells")
                .join(format!("{}.json", a["key"].as_str().unwrap())),
        );
        assert_eq!(file["replay_of"], id);
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
    // compare refuses a replay (either side): it is not a measurement.
    for (old, new) in [(&recorded, &run_dir), (&run_dir, &recorded)] {
        let o = Command::new(bin("matrix"))
            .arg("compare")
            .args([old, new])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!(
                "is a replay of run {id} (--fake-reps): nothing in it was measured"
            )),
            "{err}"
        );
    }
}

/// A replay takes cells by key; a key does not name the repetitions, durations, arguments
/// or limits. A matrix that gives a recorded cell other settings is refused before anything
/// is written, naming the cell and the settings.
#[test]
fn a_replay_whose_matrix_gives_a_recorded_cell_other_settings_is_refused() {
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(RUN);
    let d = Scratch::new("replay-other-spec");
    let text = std::fs::read_to_string(recorded.join("matrix.toml")).unwrap();
    let changed = text.replacen("duration_ms = 1500", "duration_ms = 1000", 1);
    assert_ne!(text, changed);
    let m = d.0.join("m.toml");
    std::fs::write(&m, changed).unwrap();
    let out = d.0.join("out");
    let o = Command::new(bin("matrix"))
        .args(["run", "--quiet", "--config"])
        .arg(&m)
        .arg("--fake-reps")
        .arg(&recorded)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("other settings than this matrix gives them")
            && err.contains("ping-tokio-hyper__ping__c1__pinned (duration_ms)"),
        "{err}"
    );
    assert!(!out.exists(), "a run directory was made");
}
