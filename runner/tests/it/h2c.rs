//! A scenario over h2c end to end: the service that serves it is started with `--protocol h2c`
//! and loadgen speaks it (streams in the level, every response counted, syscalls and Valgrind's
//! instructions per request over HTTP/2); the one that does not is not run, and reads "n/a" in
//! results.md and run.json; `--only` asking for that pair is refused before anything runs.

use std::path::Path;

use crate::support::live::{
    bin, matrix_at, only_run_dir, out_text, read, tiny_matrix, write_config,
};

#[test]
fn h2c_runs_where_served_and_reads_na_where_not() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("h2c-e2e");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let text = tiny_matrix(
        &[
            ("ping-tokio-hyper", bin("ping-tokio-hyper"), ""),
            ("ping-epoll", bin("ping-epoll"), ""),
        ],
        1,
        "count_syscalls = true",
        "",
    )
    .replacen(
        "\n[[scenarios]]",
        "\n[[scenarios]]\nname = \"h2c\"\npath = \"/ping\"\nprotocol = \"h2\"\n\
         expect_body_bytes = 4\nload = { model = \"closed\", connections = [1, 4], streams = 1 }\n\
         \n[[scenarios]]",
        1,
    );
    let m = write_config(&d, &text);
    let out_dir = d.join("out");

    // The pair asked for by name: refused, nothing run.
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "service=ping-epoll",
            "--only",
            "scenario=h2c",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        out_text(&out).contains("ping-epoll does not serve h2c"),
        "{}",
        out_text(&out)
    );
    assert!(!out_dir.exists() || std::fs::read_dir(&out_dir).unwrap().next().is_none());

    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=h2c",
            "--count-instructions",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);
    let cell: serde_json::Value = read(&run.join("cells/ping-tokio-hyper__h2c__c1s1__pinned.json"));
    assert_eq!(cell["status"], "ok", "{cell}");
    assert_eq!(cell["cell"]["protocol"], "h2c");
    assert_eq!(
        cell["cell"]["service_args"],
        serde_json::json!(["--protocol", "h2c"])
    );
    let rep = &cell["reps"][0];
    let counts = &rep["report"]["counts"];
    assert!(counts["ok"].as_u64().unwrap() > 0, "{counts}");
    assert_eq!(
        counts["errors"]["total"].as_u64().unwrap_or(0),
        0,
        "{counts}"
    );
    assert_eq!(rep["report"]["spec"]["protocol"], "h2c");
    // Counted over HTTP/2: syscalls in their window, instructions under Valgrind.
    assert!(
        rep["counts"]["server"]["syscall_window_responses"]
            .as_u64()
            .unwrap()
            > 0,
        "{rep}"
    );
    assert!(
        rep["instructions"]["per_request"].as_f64().unwrap() > 1000.0,
        "{rep}"
    );
    assert!(
        !run.join("cells/ping-epoll__h2c__c1s1__pinned.json")
            .exists()
    );
    let record: serde_json::Value = read(&run.join("run.json"));
    assert_eq!(
        record["not_applicable"],
        serde_json::json!([{ "service": "ping-epoll", "scenario": "h2c", "protocol": "h2c" }])
    );
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(md.contains("### h2c · h2c · profile pinned"), "{md}");
    assert!(
        md.contains("| ping-epoll | n/a: ping-epoll does not serve h2c | n/a |"),
        "{md}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
