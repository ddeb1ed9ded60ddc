//! The matrix file through the real `matrix` binary: every bad file is refused with exit 2 and
//! a `file:line:col: field: message` line before anything runs (in `matrix plan` and
//! `matrix run` alike), and what is accepted runs — including paths with spaces.

mod fixtures;

use std::path::{Path, PathBuf};
use std::process::Output;

use fixtures::*;
use runner::config::cpus::allowed_cpus;

/// A valid matrix: one service, one closed-loop scenario at 4 connections, one profile.
/// Line numbers matter: tests point at them.
fn base() -> String {
    let cpu = allowed_cpus()[0];
    format!(
        r#"[defaults]
loadgen = "/bin/true"
warmup_ms = 100
duration_ms = 200
repetitions = 1

[[services]]
name = "svc"
binary = "/bin/true"

[[scenarios]]
name = "ping"
path = "/ping"
load = {{ model = "closed", connections = [4] }}

[[profiles]]
name = "pinned"
server_cpus = "{cpu}"
loadgen_cpus = "{cpu}"
"#
    )
}

fn write(dir: &Path, text: &str) -> PathBuf {
    let m = dir.join("m.toml");
    std::fs::write(&m, text).expect("write matrix file");
    m
}

fn plan(test: &str, text: &str) -> Output {
    let d = scratch(&format!("config-{test}"));
    run_matrix([
        "plan".as_ref(),
        "--config".as_ref(),
        write(&d, text).as_os_str(),
    ])
}

/// Exit 2 with every `needle` on stderr.
fn assert_rejected(out: &Output, needles: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2\nstdout:\n{}\nstderr:\n{err}",
        String::from_utf8_lossy(&out.stdout)
    );
    for n in needles {
        assert!(err.contains(n), "{n:?} missing from:\n{err}");
    }
}

#[test]
fn the_base_matrix_is_valid() {
    let out = plan("base", &base());
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("svc__ping__c4__pinned"));
}

#[test]
fn duplicate_load_levels_are_rejected_at_the_repeated_value() {
    let text = base().replace("connections = [4]", "connections = [4, 16, 4]");
    // Line 14 `load = { model = "closed", connections = [4, 16, 4] }`: the second 4.
    assert_rejected(
        &plan("dup-conns", &text),
        &[
            "m.toml:14:50: scenarios[0].load.connections",
            "level c4 appears twice",
        ],
    );
    let text = base().replace(
        r#"{ model = "closed", connections = [4] }"#,
        r#"{ model = "open", rates_per_s = [500, 500.0], max_connections = 4 }"#,
    );
    assert_rejected(
        &plan("dup-rates", &text),
        &["scenarios[0].load.rates_per_s", "level r500 appears twice"],
    );
}

#[test]
fn names_that_could_collide_in_a_cell_key_are_rejected() {
    // Service "a__b" × scenario "c" and service "a" × scenario "b__c" both make the key
    // "a__b__c__c4__pinned".
    let text = base()
        .replace("name = \"svc\"", "name = \"a__b\"")
        .replace("name = \"ping\"", "name = \"b__c\"")
        + "\n[[services]]\nname = \"a\"\nbinary = \"/bin/true\"\n";
    assert_rejected(
        &plan("collide", &text),
        &[
            "m.toml:8:8: services[0].name",
            "m.toml:12:8: scenarios[0].name",
            "\"__\"",
        ],
    );
    // "a_" + "__" + "b" and "a" + "__" + "_b" are the same key too.
    let text = base().replace("name = \"svc\"", "name = \"svc_\"");
    assert_rejected(
        &plan("underscore", &text),
        &["m.toml:8:8: services[0].name", "'_'"],
    );
}
