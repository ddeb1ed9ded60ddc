//! The matrix file through the real `matrix` binary: every bad file is refused with exit 2 and
//! a `file:line:col: field: message` line before anything runs (in `matrix plan` and
//! `matrix run` alike), and what is accepted runs — including paths with spaces.

use crate::support::fixtures;

use std::path::{Path, PathBuf};
use std::process::Output;

use fixtures::*;
use runner::limits::cpus::allowed_cpus;

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
fn the_default_matrix_still_plans_within_its_budget() {
    // Its binaries are found next to `matrix`: built by `cargo build --workspace --bins`.
    sibling("loadgen");
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix.toml");
    let out = run_matrix(["plan".as_ref(), "--config".as_ref(), m.as_os_str()]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(" cells, "));
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

#[test]
fn durations_are_capped_before_anything_runs_in_plan_and_run() {
    let text = base().replace("duration_ms = 200", "duration_ms = 9223372036854775807");
    let want = ["m.toml:4:15: defaults.duration_ms", "at most 3600000 ms"];
    assert_rejected(&plan("huge-duration", &text), &want);

    let d = scratch("config-huge-duration-run");
    let m = write(&d, &text);
    let out_dir = d.join("results");
    let out = run_matrix([
        "run".as_ref(),
        "--config".as_ref(),
        m.as_os_str(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert_rejected(&out, &want);
    assert!(!out_dir.exists(), "a run directory was created");
}

#[test]
fn connection_counts_beyond_open_files_and_local_ports_are_rejected() {
    let text = base().replace("connections = [4]", "connections = [4, 100000]");
    assert_rejected(
        &plan("many-conns", &text),
        &[
            "m.toml:14:",
            "scenarios[0].load.connections",
            "ip_local_port_range",
        ],
    );
    let text = base().replace(
        r#"{ model = "closed", connections = [4] }"#,
        r#"{ model = "open", rates_per_s = [500], max_connections = 100000 }"#,
    );
    assert_rejected(
        &plan("many-max-conns", &text),
        &["scenarios[0].load.max_connections", "ip_local_port_range"],
    );
}

#[test]
fn zero_timeouts_are_rejected() {
    let text = base().replace(
        "repetitions = 1",
        "repetitions = 1\nrequest_timeout_ms = 0\nstartup_timeout_ms = 0",
    );
    assert_rejected(
        &plan("zero-timeouts", &text),
        &[
            "m.toml:6:22: defaults.request_timeout_ms",
            "m.toml:7:22: defaults.startup_timeout_ms",
        ],
    );
}

#[test]
fn worker_counts_are_bounded() {
    let text = base() + "workers = 100000\n";
    assert_rejected(
        &plan("workers", &text),
        &["m.toml:20:11: profiles[0].workers", "at most 1024"],
    );
}

#[test]
fn absurd_rates_are_rejected() {
    let text = base().replace(
        r#"{ model = "closed", connections = [4] }"#,
        r#"{ model = "open", rates_per_s = [500, 20000000], max_connections = 4 }"#,
    );
    assert_rejected(
        &plan("rates", &text),
        &["scenarios[0].load.rates_per_s", "at most 10000000"],
    );
}

#[test]
fn control_characters_in_binary_paths_are_rejected() {
    let text = base().replace("binary = \"/bin/true\"", "binary = \"/bin/true\\r\\nX\"");
    assert_rejected(
        &plan("crlf", &text),
        &["m.toml:9:10: services[0].binary", "control character"],
    );
    let text = base().replace("loadgen = \"/bin/true\"", "loadgen = \"/bin/true\\n\"");
    assert_rejected(
        &plan("crlf-loadgen", &text),
        &["m.toml:2:11: defaults.loadgen", "control character"],
    );
}

#[test]
fn quick_timings_are_checked_like_defaults() {
    let text = base() + "\n[quick]\ncells = [\"ping/c4/pinned\"]\nrepetitions = 0\n";
    assert_rejected(
        &plan("quick-zero", &text),
        &["m.toml:23:15: quick.repetitions"],
    );
}

#[test]
fn an_error_in_defaults_points_at_defaults_even_after_quick() {
    // [quick] first: its `repetitions =` line must not be blamed for the one in [defaults].
    let text = base()
        .replace(
            "[defaults]\n",
            "[quick]\ncells = [\"ping/c4/pinned\"]\nrepetitions = 2\n\n[defaults]\n",
        )
        .replace("repetitions = 1", "repetitions = 0");
    assert_rejected(
        &plan("quick-first", &text),
        &["m.toml:9:15: defaults.repetitions"],
    );
}

/// Built by `cargo build --workspace --bins` next to `matrix`.
fn sibling(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_BIN_EXE_matrix")).with_file_name(name);
    assert!(
        p.exists(),
        "{} not found: run `cargo build --workspace --bins` first",
        p.display()
    );
    p
}

#[test]
fn binaries_and_matrix_file_in_directories_with_spaces_run_end_to_end() {
    let d = scratch("config-spaces");
    let bins = d.join("my bins");
    std::fs::create_dir_all(&bins).unwrap();
    for b in ["loadgen", "ping-tokio-hyper"] {
        std::os::unix::fs::symlink(sibling(b), bins.join(format!("{b} copy"))).unwrap();
    }
    let here = d.join("a matrix dir");
    std::fs::create_dir_all(&here).unwrap();
    let text = base()
        .replace(
            "loadgen = \"/bin/true\"",
            "loadgen = \"../my bins/loadgen copy\"",
        )
        .replace(
            "binary = \"/bin/true\"",
            "binary = \"../my bins/ping-tokio-hyper copy\"",
        );
    let m = write(&here, &text);
    let out_dir = d.join("the results");
    let out = run_matrix([
        "run".as_ref(),
        "--config".as_ref(),
        m.as_os_str(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert_success(&out);
    let run_dir = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let cell: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("cells/svc__ping__c4__pinned.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cell["status"], "ok", "{cell:#}");
}

/// The base matrix with its load line replaced (line 14 stays line 14).
fn with_load(load: &str) -> String {
    base().replace(
        r#"load = { model = "closed", connections = [4] }"#,
        &format!("load = {{ {load} }}"),
    )
}

#[test]
fn a_churn_scenario_plans_with_its_estimate() {
    let out = plan(
        "churn-ok",
        &with_load(r#"model = "churn", connections = [100], cycles = 3"#),
    );
    assert_success(&out);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains(" c100x3 "), "{s}");
    assert!(s.contains("ms churn"), "{s}");
}

#[test]
fn churn_values_are_checked_where_they_are_written() {
    // "load = { model = " is 17 columns: the model at 18, the connections list at 41,
    // its first value at 42, cycles at 55.
    let out = plan(
        "churn-zero",
        &with_load(r#"model = "churn", connections = [0], cycles = 1"#),
    );
    assert_rejected(
        &out,
        &[
            "m.toml:14:41: scenarios[0].load.connections: needs at least one level",
            "m.toml:14:55: scenarios[0].load.cycles: must be between 2",
        ],
    );
    let out = plan(
        "churn-cycles",
        &with_load(r#"model = "churn", connections = [9], cycles = 101"#),
    );
    assert_rejected(&out, &["m.toml:14:55: scenarios[0].load.cycles", "and 100"]);
    let out = plan(
        "churn-missing",
        &with_load(r#"model = "churn", connections = [9]"#),
    );
    assert_rejected(
        &out,
        &["m.toml:14:18: scenarios[0].load.cycles: churn model needs cycles"],
    );
    // More connections than `ulimit -n` or the local port range allow.
    let out = plan(
        "churn-huge",
        &with_load(r#"model = "churn", connections = [4000000], cycles = 2"#),
    );
    assert_rejected(&out, &["m.toml:14:42: scenarios[0].load.connections"]);
    // A field of another model, and cycles on a closed scenario.
    let out = plan(
        "churn-misplaced",
        &with_load(r#"model = "churn", connections = [9], cycles = 2, pipeline = 4"#),
    );
    assert_rejected(
        &out,
        &[
            "m.toml:14:",
            "scenarios[0].load.pipeline: only for model = \"closed\"",
        ],
    );
    let out = plan(
        "churn-on-closed",
        &with_load(r#"model = "closed", connections = [4], cycles = 2"#),
    );
    assert_rejected(
        &out,
        &["scenarios[0].load.cycles: only for model = \"churn\""],
    );
}

#[test]
fn bad_hosts_and_placements_exit_2_naming_line_and_field() {
    let text = base()
        + r#"
[[hosts]]
name = "gen"
host = "-oProxyCommand=evil"
work_dir = "/tmp/with space"

[[profiles]]
name = "split"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "nowhere"
loadgen_hosts = ["gen", "local"]
"#;
    let out = plan("hosts", &text);
    assert_rejected(
        &out,
        &[
            "m.toml:23:8: hosts[0].host: \"-oProxyCommand=evil\" starts with '-'",
            "m.toml:24:12: hosts[0].work_dir:",
            "m.toml:30:15: profiles[1].server_host: unknown host \"nowhere\"",
        ],
    );
}
