//! Scenarios over TLS end to end: HTTP/1.1 and h2 over TLS 1.3 on a service that serves them,
//! started with the run's test certificate (never recorded among its arguments), probed,
//! verified and loaded over TLS, counted (syscalls, and Valgrind's instructions through the
//! runner's own TLS client); the handshake's outcome and the connection set-up recorded per
//! cell and shown in results.md; a service that does not serve TLS reads "n/a".

use std::path::Path;

use crate::support::live::{
    bin, matrix_at, only_run_dir, out_text, read, tiny_matrix, write_config,
};

#[test]
fn tls_runs_where_served_and_reads_na_where_not() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tls-e2e");
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
        "\n[[scenarios]]\nname = \"tls\"\npath = \"/ping\"\ntls = true\n\
         expect_body_bytes = 4\nload = { model = \"closed\", connections = [1] }\n\
         \n[[scenarios]]\nname = \"h2-tls\"\npath = \"/ping\"\nprotocol = \"h2\"\ntls = true\n\
         expect_body_bytes = 4\nload = { model = \"closed\", connections = [1], streams = 1 }\n\
         \n[[scenarios]]",
        1,
    );
    let m = write_config(&d, &text);
    let out_dir = d.join("out");
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=tls,h2-tls",
            "--count-instructions",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);
    for (key, protocol, alpn) in [
        (
            "ping-tokio-hyper__tls__c1__pinned",
            "http/1.1+tls",
            "http/1.1",
        ),
        ("ping-tokio-hyper__h2-tls__c1s1__pinned", "h2+tls", "h2"),
    ] {
        let cell: serde_json::Value = read(&run.join(format!("cells/{key}.json")));
        assert_eq!(cell["status"], "ok", "{cell}");
        assert_eq!(cell["cell"]["protocol"], protocol);
        // The certificate's place is the runner's business, not the record's.
        assert_eq!(
            cell["cell"]["service_args"],
            serde_json::json!(["--protocol", protocol])
        );
        let rep = &cell["reps"][0];
        let report = &rep["report"];
        assert!(report["counts"]["ok"].as_u64().unwrap() > 0, "{report}");
        assert!(
            report["spec"]["url"]
                .as_str()
                .unwrap()
                .starts_with("https://")
        );
        let tls = &report["tls"];
        assert_eq!(tls["version"], "TLSv1_3", "{tls}");
        assert_eq!(tls["alpn"], alpn, "{tls}");
        assert_eq!(tls["server_key"], "RSA-2048", "{tls}");
        assert!(report["connection_setup"]["us"]["p50"].as_u64().unwrap() > 0);
        assert_eq!(cell["summary"]["tls"]["alpn"], alpn);
        assert!(
            cell["summary"]["connection_setup_p50_us"]["median"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        // Counted over TLS: syscalls in their window, instructions under Valgrind.
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
    }
    let record: serde_json::Value = read(&run.join("run.json"));
    let na = record["not_applicable"].as_array().unwrap();
    assert!(na.contains(
        &serde_json::json!({ "service": "ping-epoll", "scenario": "tls", "protocol": "http/1.1+tls" })
    ));
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(
        md.contains("### tls · http/1.1+tls · profile pinned"),
        "{md}"
    );
    assert!(md.contains("TLS: TLSv1_3 · TLS13_"), "{md}");
    assert!(md.contains("server key RSA-2048"), "{md}");
    assert!(
        md.contains("| ping-epoll | n/a: ping-epoll does not serve h2+tls |\n"),
        "{md}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}
