//! `matrix compare` matches runs on loadgen's method identity, not the repository commit:
//! two commits with the same loadgen compare, a changed loadgen is refused naming what
//! changed, and runs older than the identity (the committed ones) compare with a warning.

use crate::support::fixtures;

use std::path::Path;

use crate::support::live::Scratch;
use fixtures::*;
use runner::compare::{Options, compare};
use runner::results::set::load;

const OPT: Options = Options {
    noise_pct: 2.0,
    force: false,
};

fn base(_: &str, c: u32) -> Perf {
    Perf::new(10_000.0 * f64::from(c))
}

/// Sets run.json's commit (the fixture writes one per run id).
fn set_commit(run: &Path, commit: &str) {
    let p = run.join("run.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    v["environment"]["source"]["git_commit"] = commit.into();
    std::fs::write(&p, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

#[test]
fn two_commits_with_the_same_loadgen_compare_without_force() {
    let d = Scratch::new("method-same");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    set_commit(&old, &"1".repeat(40));
    set_commit(&new, &"2".repeat(40));
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).expect("comparable");
    assert!(!c.forced && c.incomparable.is_empty());
    assert!(
        c.warnings.iter().all(|w| !w.contains("method")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn a_changed_measuring_code_is_refused_with_the_reason() {
    let d = Scratch::new("method-changed");
    let old = write_run(&d, "old", &MACHINE, &matrix(3, base));
    let changed = Machine {
        loadgen_identity: Some("loadgen 0.1.0 src=ffee00ffee00ffee deps=11bb11bb11bb11bb"),
        ..MACHINE
    };
    let new = write_run(&d, "new", &changed, &matrix(3, base));
    let err = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("load generator method differs: its measuring code (loadgen/src) differs"),
        "{err}"
    );
    assert!(!err.contains("dependencies"), "{err}");
    let out = run_matrix(["compare".as_ref(), old.as_os_str(), new.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("measuring code"));
}

#[test]
fn a_run_older_than_the_identity_compares_with_a_warning() {
    let d = Scratch::new("method-legacy");
    let stamped = |commit: &'static str| Machine {
        loadgen_version: commit,
        loadgen_identity: None,
        ..MACHINE
    };
    let old = write_run(
        &d,
        "old",
        &stamped("loadgen pingmatrix-build commit=85116e2 dirty=false;"),
        &matrix(3, base),
    );
    let new = write_run(&d, "new", &MACHINE, &matrix(3, base));
    let c = compare(&load(&old).unwrap(), &load(&new).unwrap(), OPT).expect("comparable");
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("load generator method unknown on the old side")),
        "{:?}",
        c.warnings
    );
    // A recorded version number that differs is still a refusal.
    let v2 = Machine {
        loadgen_version: "loadgen 0.2.0",
        loadgen_identity: None,
        ..MACHINE
    };
    let older = write_run(&d, "older", &v2, &matrix(3, base));
    let err = compare(&load(&older).unwrap(), &load(&new).unwrap(), OPT).unwrap_err();
    assert!(
        err.to_string().contains("version differs: 0.2.0 vs 0.1.0"),
        "{err}"
    );
}

/// The committed runs made at 85116e2 and 492c110 on one machine (the example).
#[test]
fn the_committed_runs_of_two_commits_compare() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let old = results.join("2026-12-01T04-39-39Z-85116e2");
    let new = results.join("2026-12-01T06-28-28Z-492c110");
    let out = run_matrix(["compare".as_ref(), old.as_os_str(), new.as_os_str()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("load generator method unknown"), "{text}");
}
