//! What a run can tell apart, decided by the real `matrix` on outcomes a file authors
//! (`--fake-reps OUTCOMES.toml`, `runner/src/rep/authored.rs`): nothing is started, so the
//! numbers are the ones chosen to decide each case — `matrix calibrate` (two identical arms),
//! verdicts against the baseline with a service 26 times costlier per request, adaptive
//! repetitions and the drift series; a calibration arm that cannot start; bad `--target-ci`
//! values. That a real service and the real generator measure such a difference is the
//! end-to-end tests' and the gate's (`scripts/lib/test_gate_*.py`) to hold.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::live;

use live::{Scratch, bin, matrix_at, only_run_dir, out_text, read, tiny_matrix, write_config};
use runner::results::adaptive::StopReason;
use runner::results::difference::Verdict;
use runner::results::metric::Metric;
use runner::results::schema::{CellResult, CellStatus, ResultsFile, RunRecord, RunStatus};

fn matrix_toml(services: &[(&str, PathBuf, &str)], defaults: &str, tail: &str) -> String {
    tiny_matrix(services, 2, defaults, tail)
}

/// `matrix ARGS` on `config` into `out`, every repetition authored by `outcomes`.
fn authored(config: &Path, out: &Path, outcomes: &Path, args: &[&str]) -> std::process::Output {
    matrix_at(config, out, args)
        .arg("--fake-reps")
        .arg(outcomes)
        .output()
        .unwrap()
}

/// ping-tokio-hyper's order of magnitude on one core: 40 µs of CPU a request, ±1 %.
const HYPER: &str = "[[cell]]\nservice = \"hyper\"\nreq_per_s = 20000.0\ncpu_us_per_request = 40.0\nspread_pct = 1.0\n";

#[test]
fn calibrate_measures_two_identical_arms_and_survives_an_arm_that_cannot_start() {
    let d = Scratch::new("calibrate");
    let hyper = bin("ping-tokio-hyper");
    let exits = d.0.join("exits");
    std::fs::write(&exits, "#!/bin/sh\necho 'no' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&exits, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let outcomes = d.0.join("outcomes.toml");
    std::fs::write(
        &outcomes,
        format!(
            "{HYPER}[[cell]]\nservice = \"exits\"\n\
             fail = {{ stage = \"startup\", reason = \"exited before its first 200: exit status: 3\" }}\n"
        ),
    )
    .unwrap();
    // No [calibration]: the baseline (first service) at the first closed- and open-loop cell.
    let m = write_config(
        &d.0,
        &matrix_toml(
            &[("hyper", hyper.clone(), ""), ("exits", exits.clone(), "")],
            "",
            "",
        ),
    );
    let out = d.0.join("results");
    let o = authored(&m, &out, &outcomes, &["calibrate", "--quiet"]);
    assert!(o.status.success(), "{}", out_text(&o));
    let dir = only_run_dir(&out);
    let run: RunRecord = read(&dir.join("run.json"));
    assert!(run.calibration_only);
    assert_eq!(run.plan.len(), 4, "two cells × two arms");
    assert!(
        run.plan
            .iter()
            .all(|c| c.service == "hyper" && c.arm.is_some())
    );
    let res: ResultsFile = read(&dir.join("results.json"));
    assert!(res.cells.is_empty(), "arms are not matrix cells");
    let cal = res.calibration.expect("calibration in results.json");
    assert_eq!(cal.service, "hyper");
    assert_eq!(cal.cells.len(), 2);
    assert_eq!(
        cal.cells.iter().map(|c| c.open_loop).collect::<Vec<_>>(),
        [false, true]
    );
    for c in &cal.cells {
        assert_eq!(c.pairs, 2, "{c:?}");
        assert!(c.failures.is_empty(), "{:?}", c.failures);
        // The timed metrics; the counted ones join them where perf could count.
        let timed = c.metrics.iter().filter(|m| !m.metric.def().counted).count();
        assert_eq!(
            timed,
            if c.open_loop { 6 } else { 7 },
            "req/s is not measured at a fixed rate"
        );
        let cpu = c.metric(Metric::CpuUsPerRequest).unwrap();
        assert_eq!(cpu.n, 2);
        assert!(cpu.aa.as_ref().is_some_and(|d| d.paired), "{cpu:?}");
        assert!(cpu.mde_pct.is_some_and(|x| x > 0.0), "{cpu:?}");
        assert!(cpu.mde_between_runs_pct.is_some());
    }
    let md = std::fs::read_to_string(dir.join("results.md")).unwrap();
    assert!(
        md.contains("## What this machine can tell apart (calibration)"),
        "{md}"
    );

    // An arm that cannot start fails like any cell; the run completes and says why.
    let m = write_config(
        &d.0,
        &matrix_toml(
            &[("hyper", hyper.clone(), ""), ("exits", exits.clone(), "")],
            "",
            "\n[calibration]\nservice = \"exits\"\ncells = [\"ping/c4/pinned\"]\n",
        ),
    );
    let out = d.0.join("results2");
    let o = authored(
        &m,
        &out,
        &outcomes,
        &["run", "--quiet", "--only", "service=hyper"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", out_text(&o));
    let dir = only_run_dir(&out);
    let run: RunRecord = read(&dir.join("run.json"));
    assert_eq!(run.status, RunStatus::Completed);
    let arm: CellResult = read(&dir.join("cells/calibration-a__exits__ping__c4__pinned.json"));
    assert_eq!(arm.status, CellStatus::Failed);
    let res: ResultsFile = read(&dir.join("results.json"));
    let cal = res
        .calibration
        .expect("calibration recorded even when it failed");
    assert_eq!(
        cal.cells[0].failures.len(),
        2,
        "{:?}",
        cal.cells[0].failures
    );
    assert!(
        res.cells.iter().all(|c| c.status == Some(CellStatus::Ok)),
        "the matrix went on"
    );

    // A calibration of a service the run measures there: arm B runs in that cell's group and
    // is paired with the cell itself (arm A is not run again).
    let m = write_config(
        &d.0,
        &matrix_toml(
            &[("hyper", hyper, ""), ("exits", exits, "")],
            "",
            "\n[calibration]\nservice = \"hyper\"\ncells = [\"ping/c4/pinned\"]\n",
        ),
    );
    let out = d.0.join("results3");
    let o = authored(
        &m,
        &out,
        &outcomes,
        &["run", "--quiet", "--only", "service=hyper"],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let dir = only_run_dir(&out);
    let run: RunRecord = read(&dir.join("run.json"));
    let arms: Vec<&str> = (run.plan.iter())
        .filter(|c| c.arm.is_some())
        .map(|c| c.key.as_str())
        .collect();
    assert_eq!(arms, ["calibration-b__hyper__ping__c4__pinned"]);
    assert!(
        !dir.join("cells/calibration-a__hyper__ping__c4__pinned.json")
            .exists()
    );
    let res: ResultsFile = read(&dir.join("results.json"));
    assert!(res.cells.iter().all(|c| !c.key.starts_with("calibration")));
    let cal = res.calibration.expect("calibration in results.json");
    assert_eq!(cal.cells.len(), 1);
    assert_eq!(cal.cells[0].pairs, 2, "{:?}", cal.cells[0]);
    assert!(
        cal.cells[0].failures.is_empty(),
        "{:?}",
        cal.cells[0].failures
    );
}

#[test]
fn a_slower_service_is_called_worse_and_adaptive_cells_say_why_they_stopped() {
    let d = Scratch::new("verdicts");
    let hyper = bin("ping-tokio-hyper");
    // b spends 1 ms more CPU per request than a, as `--burn-ns 1000000` makes it.
    let outcomes = d.0.join("outcomes.toml");
    std::fs::write(
        &outcomes,
        "[[cell]]\nservice = \"a\"\nreq_per_s = 20000.0\ncpu_us_per_request = 40.0\nspread_pct = 1.0\n\
         [[cell]]\nservice = \"b\"\nreq_per_s = 950.0\ncpu_us_per_request = 1040.0\nspread_pct = 1.0\n",
    )
    .unwrap();
    let m = write_config(
        &d.0,
        &matrix_toml(
            &[
                ("a", hyper.clone(), ""),
                ("b", hyper, "\"--burn-ns\", \"1000000\""),
            ],
            "drift_points = 2\nmax_repetitions = 3\nbaseline = \"a\"",
            "",
        ),
    );
    let out = d.0.join("results");
    // A target this tight (a 1e-9 % half-width) is never met: every cell runs to its cap of 3.
    let o = authored(
        &m,
        &out,
        &outcomes,
        &["run", "--quiet", "--target-ci", "1e-9"],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let dir = only_run_dir(&out);
    let res: ResultsFile = read(&dir.join("results.json"));
    assert_eq!(res.baseline.as_deref(), Some("a"));
    for c in &res.cells {
        let s = c
            .stopped
            .as_ref()
            .expect("adaptive cells record their stop");
        assert_eq!(
            (s.reason, s.repetitions, c.n),
            (StopReason::Cap, 3, 3),
            "{}",
            c.key
        );
    }
    assert_eq!(res.verdicts.len(), 2, "b against a in both cells");
    for v in &res.verdicts {
        assert_eq!(v.service, "b");
        let cpu = v.metric(Metric::CpuUsPerRequest).unwrap();
        assert_eq!(cpu.verdict, Verdict::Worse, "{v:?}");
        assert!(cpu.difference.as_ref().unwrap().paired);
        assert!(cpu.difference.as_ref().unwrap().ratio > 1.5, "{v:?}");
    }
    let drift = res.drift.expect("drift");
    assert_eq!(drift.series.len(), 2);
    assert_eq!(
        drift
            .series
            .iter()
            .map(|p| p.after_groups)
            .collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(drift.max_requests_per_s_drift_pct.is_some());
    let md = std::fs::read_to_string(dir.join("results.md")).unwrap();
    for want in [
        "## Against the baseline: `a`",
        "## Repetitions (adaptive)",
        "after group 2",
    ] {
        assert!(md.contains(want), "{want:?} missing:\n{md}");
    }

    // A generous target: each cell stops as soon as its interval is within it, else at the cap.
    let out = d.0.join("results-met");
    let o = authored(
        &m,
        &out,
        &outcomes,
        &["run", "--quiet", "--target-ci", "100"],
    );
    assert!(o.status.success(), "{}", out_text(&o));
    let res: ResultsFile = read(&only_run_dir(&out).join("results.json"));
    for c in &res.cells {
        let s = c.stopped.as_ref().unwrap();
        let hw = s.ci_half_pct.unwrap();
        match s.reason {
            StopReason::TargetMet => assert!(hw <= 100.0 && s.repetitions >= 2, "{s:?}"),
            StopReason::Cap => assert!(hw > 100.0 && s.repetitions == 3, "{s:?}"),
        }
        assert_eq!(s.repetitions, c.n, "{}", c.key);
        let want = if c.offered_rate_per_s.is_some() {
            Metric::CpuUsPerRequest
        } else {
            Metric::RequestsPerS
        };
        assert_eq!(
            s.metric, want,
            "open loop aims at CPU/request, closed at req/s"
        );
    }
    assert!(
        res.cells
            .iter()
            .any(|c| c.stopped.as_ref().unwrap().reason == StopReason::TargetMet),
        "a ±100 % target is met somewhere"
    );
}

#[test]
fn bad_target_ci_is_refused_before_anything_runs() {
    let d = Scratch::new("target-ci");
    let m = write_config(
        &d.0,
        &matrix_toml(&[("a", bin("ping-tokio-hyper"), "")], "", ""),
    );
    let out = d.0.join("results");
    for bad in ["0", "-5", "100.5", "abc", "NaN"] {
        let o = matrix_at(&m, &out, &["run", "--target-ci", bad])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", out_text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--target-ci"),
            "{bad}: {}",
            out_text(&o)
        );
        assert!(!out.exists(), "{bad}: nothing may run");
    }
    for (line, want) in [
        ("target_ci_pct = 0.0", "defaults.target_ci_pct"),
        ("target_ci_pct = 150.0", "defaults.target_ci_pct"),
        (
            "target_ci_pct = 5.0\nmax_repetitions = 1",
            "defaults.max_repetitions",
        ),
        ("drift_points = 99", "defaults.drift_points"),
        ("baseline = \"zzz\"", "defaults.baseline"),
    ] {
        let m = write_config(
            &d.0,
            &matrix_toml(&[("a", bin("ping-tokio-hyper"), "")], line, ""),
        );
        let o = matrix_at(&m, &out, &["run"]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{line}: {}", out_text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{line}: {}",
            out_text(&o)
        );
        assert!(!out.exists(), "{line}: nothing may run");
    }
    let m = write_config(
        &d.0,
        &matrix_toml(
            &[("a", bin("ping-tokio-hyper"), "")],
            "",
            "\n[calibration]\nservice = \"nope\"\ncells = [\"ping/c9/pinned\"]\n",
        ),
    );
    let o = Command::new(bin("matrix"))
        .args(["plan", "--config", m.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("calibration.service") && err.contains("calibration.cells"),
        "{err}"
    );
}
