//! The scheduling policy over the fake runner: no service starts, each test takes
//! milliseconds (a temporary store holds the cell files, as in a real run).

use std::path::PathBuf;

use super::fake::Fake;
use super::run;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::results::schema::{Adaptive, CellResult, CellSpec, CellStatus, StopReason};
use crate::results::store::Store;
use crate::results::suspect::tests::spec;
use loadgen::LoadModel;

fn cell(service: &str, level: &str, repetitions: u32) -> CellSpec {
    let mut c = spec(LoadModel::Closed {
        connections: 4,
        pipeline: 1,
    });
    c.service = service.into();
    c.level = level.into();
    c.key = format!("{service}__p__{level}__x");
    c.repetitions = repetitions;
    c
}

fn plan(groups: Vec<Vec<CellSpec>>) -> Plan {
    Plan {
        groups,
        calibration: vec![],
        reference: None,
        drift_points: 0,
        baseline: "a".into(),
        syscalls_off: Some("not counted"),
        count_instructions: false,
        not_applicable: vec![],
    }
}

/// A fresh store under the temp dir, removed when dropped.
struct TempStore(Store, PathBuf);

impl TempStore {
    fn new(name: &str) -> TempStore {
        let dir =
            std::env::temp_dir().join(format!("pingmatrix-schedule-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempStore(Store::create(dir.clone()).unwrap(), dir)
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn fake(values: &[(&CellSpec, &[f64])]) -> Fake {
    Fake {
        rps: values
            .iter()
            .map(|(c, v)| (c.key.clone(), v.to_vec()))
            .collect(),
        ..Fake::default()
    }
}

fn quiet() -> Progress {
    Progress::new(0, 0.0, true)
}

#[test]
fn calibration_first_then_groups_in_order_with_repetitions_interleaved() {
    let (a, b) = (cell("a", "c4", 3), cell("b", "c4", 3));
    let (a2, b2) = (cell("a", "c8", 1), cell("b", "c8", 1));
    let arm = {
        let mut c = cell("a", "cal", 1);
        c.key = "calibration-x__a".into();
        c
    };
    let mut p = plan(vec![
        vec![a.clone(), b.clone()],
        vec![a2.clone(), b2.clone()],
    ]);
    p.calibration = vec![vec![arm.clone()]];
    let s = TempStore::new("order");
    let mut f = fake(&[
        (&a, &[100.0]),
        (&b, &[100.0]),
        (&a2, &[1.0]),
        (&b2, &[1.0]),
        (&arm, &[1.0]),
    ]);
    let out = run(&p, &s.0, "run", false, &mut f, &mut quiet()).unwrap();
    assert!(out.completed);
    assert_eq!(
        f.keys(),
        [
            "calibration-x__a#1",
            "a__p__c4__x#1",
            "b__p__c4__x#1",
            "a__p__c4__x#2",
            "b__p__c4__x#2",
            "a__p__c4__x#3",
            "b__p__c4__x#3",
            "a__p__c8__x#1",
            "b__p__c8__x#1",
        ]
    );
    // A cool-down after every repetition, and every cell file final.
    assert_eq!(f.cool_downs, 9);
    assert_eq!(s.0.read_cell(&a.key).unwrap().status, CellStatus::Ok);
    assert_eq!(s.0.read_cell(&a.key).unwrap().reps.len(), 3);
}

#[test]
fn a_failed_cell_stops_repeating_and_the_others_go_on() {
    let (a, b) = (cell("a", "c4", 3), cell("b", "c4", 3));
    let s = TempStore::new("failed");
    // b is not in the fake's table: every repetition of it fails.
    let mut f = fake(&[(&a, &[100.0])]);
    run(
        &plan(vec![vec![a.clone(), b.clone()]]),
        &s.0,
        "run",
        false,
        &mut f,
        &mut quiet(),
    )
    .unwrap();
    assert_eq!(
        f.keys(),
        [
            "a__p__c4__x#1",
            "b__p__c4__x#1",
            "a__p__c4__x#2",
            "a__p__c4__x#3"
        ]
    );
    assert_eq!(s.0.read_cell(&b.key).unwrap().status, CellStatus::Failed);
    assert_eq!(s.0.read_cell(&a.key).unwrap().status, CellStatus::Ok);
}

#[test]
fn an_adaptive_cell_stops_once_its_ci_is_tight_and_a_noisy_one_runs_to_its_cap() {
    let adaptive = Some(Adaptive {
        target_ci_pct: 5.0,
        max_repetitions: 6,
    });
    let mut steady = cell("a", "c4", 3);
    steady.adaptive = adaptive;
    let mut noisy = cell("b", "c4", 3);
    noisy.adaptive = adaptive;
    let s = TempStore::new("adaptive");
    let mut f = fake(&[(&steady, &[100.0, 101.0]), (&noisy, &[50.0, 150.0])]);
    run(
        &plan(vec![vec![steady.clone(), noisy.clone()]]),
        &s.0,
        "run",
        false,
        &mut f,
        &mut quiet(),
    )
    .unwrap();
    let count = |k: &str| f.calls.iter().filter(|(c, _)| c == k).count();
    assert_eq!(count(&steady.key), 3, "{:?}", f.keys());
    assert_eq!(count(&noisy.key), 6, "{:?}", f.keys());
    // The steady cell dropped out of the rounds; the noisy one kept its interleaved place.
    assert_eq!(
        f.keys()[6..],
        ["b__p__c4__x#4", "b__p__c4__x#5", "b__p__c4__x#6"]
    );
    let stopped = |k: &str| s.0.read_cell(k).unwrap().stopped.unwrap();
    assert_eq!(stopped(&steady.key).reason, StopReason::TargetMet);
    assert_eq!(stopped(&noisy.key).reason, StopReason::Cap);
    assert_eq!(stopped(&noisy.key).repetitions, 6);
}

#[test]
fn calibration_arms_under_a_ci_target_stop_together_with_the_same_count() {
    // A is steady (target met after its 2 minimum repetitions), B less so (met after 3):
    // each arm alone would stop at 2 and 3. Together both run 3 (A B A B A B), none left
    // over.
    let adaptive = Some(Adaptive {
        target_ci_pct: 5.0,
        max_repetitions: 6,
    });
    let arm = |name: &str| {
        let mut c = cell("a", "cal", 2);
        c.key = format!("calibration-x__{name}");
        c.arm = Some(name.into());
        c.adaptive = adaptive;
        c
    };
    let (a, b) = (arm("a"), arm("b"));
    let mut p = plan(vec![]);
    p.calibration = vec![vec![a.clone(), b.clone()]];
    let s = TempStore::new("arms");
    let mut f = fake(&[
        (&a, &[100.0, 100.5, 100.0, 100.5, 100.0, 100.5]),
        (&b, &[99.0, 101.0, 100.0, 100.0, 100.0, 100.0]),
    ]);
    let mut progress = Progress::new(12, 1.0, true);
    run(&p, &s.0, "run", false, &mut f, &mut progress).unwrap();
    let count = |k: &str| f.calls.iter().filter(|(c, _)| c == k).count();
    assert_eq!(count(&a.key), count(&b.key), "{:?}", f.keys());
    let (ra, rb) = (
        s.0.read_cell(&a.key).unwrap(),
        s.0.read_cell(&b.key).unwrap(),
    );
    assert_eq!(ra.reps.len(), rb.reps.len());
    assert_eq!((ra.status, rb.status), (CellStatus::Ok, CellStatus::Ok));
    let (sa, sb) = (ra.stopped.unwrap(), rb.stopped.unwrap());
    assert_eq!(sa.repetitions, sb.repetitions);
    assert_eq!(sa.repetitions, 3, "{:?}", f.keys());
    assert_eq!(
        (sa.reason, sb.reason),
        (StopReason::TargetMet, StopReason::TargetMet)
    );
}

#[test]
fn the_reference_reruns_at_each_drift_point_and_the_record_compares_it_to_rep_1() {
    let groups: Vec<Vec<CellSpec>> = (1..=4)
        .map(|i| vec![cell("a", &format!("c{i}"), 1)])
        .collect();
    let reference = groups[0][0].clone();
    let mut p = plan(groups.clone());
    p.reference = Some(reference.clone());
    p.drift_points = 2;
    assert_eq!(p.drift_after(), [2, 4]);
    let s = TempStore::new("drift");
    let rest: Vec<(&CellSpec, &[f64])> = groups[1..].iter().map(|g| (&g[0], &[1.0][..])).collect();
    // Rep 1 of the reference at 100 req/s, the re-runs at 90 then 80.
    let mut f = fake(&[(&reference, &[100.0, 90.0, 80.0])]);
    f.rps.extend(fake(&rest).rps);
    let out = run(&p, &s.0, "run", false, &mut f, &mut quiet()).unwrap();
    assert_eq!(
        f.keys(),
        [
            "a__p__c1__x#1",
            "a__p__c2__x#1",
            "a__p__c1__x#0",
            "a__p__c3__x#1",
            "a__p__c4__x#1",
            "a__p__c1__x#0",
        ]
    );
    let d = out.drift.unwrap();
    assert_eq!(d.series.len(), 2);
    assert_eq!(d.series[0].after_groups, 2);
    assert_eq!(d.series[1].after_groups, 4);
    assert_eq!(d.first_requests_per_s, Some(100.0));
    assert_eq!(d.rerun_requests_per_s, Some(80.0));
    assert!((d.requests_per_s_drift_pct.unwrap() + 20.0).abs() < 1e-9);
    assert!((d.max_requests_per_s_drift_pct.unwrap() + 20.0).abs() < 1e-9);
}

#[test]
fn resume_skips_cells_an_earlier_run_finished_and_reruns_the_rest() {
    let (a, b) = (cell("a", "c4", 2), cell("b", "c4", 2));
    let s = TempStore::new("resume");
    let mut done = CellResult::new("run", &a);
    done.status = CellStatus::Ok;
    s.0.write_cell(&done).unwrap();
    // b was in flight when the earlier run stopped: partial, so it runs again from rep 1.
    s.0.write_cell(&CellResult::new("run", &b)).unwrap();
    let mut f = fake(&[(&a, &[1.0]), (&b, &[1.0])]);
    run(
        &plan(vec![vec![a.clone(), b.clone()]]),
        &s.0,
        "run",
        false,
        &mut f,
        &mut quiet(),
    )
    .unwrap();
    assert_eq!(f.keys(), ["b__p__c4__x#1", "b__p__c4__x#2"]);
    assert_eq!(s.0.read_cell(&b.key).unwrap().reps.len(), 2);
}

/// Issue 47 item 10: after `--resume` restarted b, all of b's repetitions ran after a's, yet
/// they were paired on their numbers ("repetition i of both ran side by side") — two
/// identical binaries came out "p99 10.28× slower". Only repetitions one process ran are
/// paired; the rest are compared as independent samples.
#[test]
fn a_cell_restarted_by_resume_is_not_paired_with_its_partner() {
    let (a, b) = (cell("a", "c4", 3), cell("b", "c4", 3));
    let s = TempStore::new("resume-pairing");
    let p = plan(vec![vec![a.clone(), b.clone()]]);
    let values: &[f64] = &[100.0, 90.0, 110.0];
    let mut f = fake(&[(&a, values), (&b, values)]);
    run(&p, &s.0, "run", false, &mut f, &mut quiet()).unwrap();
    let paired = |s: &Store| {
        let cells = [s.read_cell(&a.key).unwrap(), s.read_cell(&b.key).unwrap()];
        let v =
            crate::results::verdict::against_baseline(&cells.iter().collect::<Vec<_>>(), "a", None);
        v[0].metrics[0].difference.as_ref().unwrap().paired
    };
    assert!(paired(&s.0), "one run: side by side");
    // b restarted by a resume, in a later process: its repetitions all run after a's.
    std::thread::sleep(std::time::Duration::from_millis(2));
    s.0.write_cell(&CellResult::new("run", &b)).unwrap();
    let mut f = fake(&[(&a, values), (&b, values)]);
    run(&p, &s.0, "run", false, &mut f, &mut quiet()).unwrap();
    assert_eq!(
        f.keys(),
        ["b__p__c4__x#1", "b__p__c4__x#2", "b__p__c4__x#3"]
    );
    assert!(!paired(&s.0), "a and b did not run side by side");
}

#[test]
fn profiled_repetitions_follow_the_group_for_completed_cells_only() {
    let (a, b) = (cell("a", "c4", 1), cell("b", "c4", 1));
    let s = TempStore::new("profiled");
    let mut f = fake(&[(&a, &[1.0])]);
    run(
        &plan(vec![vec![a.clone(), b.clone()]]),
        &s.0,
        "run",
        true,
        &mut f,
        &mut quiet(),
    )
    .unwrap();
    let profiled = format!("a__p__c4__x#{}", u32::MAX);
    assert_eq!(
        f.keys(),
        ["a__p__c4__x#1", "b__p__c4__x#1", profiled.as_str()]
    );
}

#[test]
fn resume_runs_only_the_missing_profiled_repetition_of_a_finished_cell() {
    let a = cell("a", "c4", 2);
    let s = TempStore::new("resume-profiled");
    let mut done = CellResult::new("run", &a);
    done.status = CellStatus::Ok;
    s.0.write_cell(&done).unwrap();
    let mut f = fake(&[(&a, &[1.0])]);
    run(
        &plan(vec![vec![a.clone()]]),
        &s.0,
        "run",
        true,
        &mut f,
        &mut quiet(),
    )
    .unwrap();
    // Its measured repetitions stand; only the profiled one (lost to the interrupt) runs.
    let profiled = format!("a__p__c4__x#{}", u32::MAX);
    assert_eq!(f.keys(), [profiled.as_str()]);
}
