//! Bring your own service, and variants: an external server started through `command`
//! goes through the whole pipeline (readiness, verification of its path, load, sampling,
//! results.md saying its runtime is not reported); a bad command fails its cells with the
//! reason while the run goes on; and bad variant or command input is refused (exit 2)
//! before anything runs.

use crate::support;
use crate::support::live;

use std::path::{Path, PathBuf};

use live::*;

/// A minimal HTTP/1.1 keep-alive responder in Python: /ping → "pong" (the contract's
/// bytes and headers), or a wrong body when started with "wrong".
const RESPONDER: &str = r#"
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = b"pong" if sys.argv[3] == "ok" else b"nope!"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass

ThreadingHTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
"#;

fn external(name: &str, command: &[&str]) -> String {
    let argv: Vec<String> = command.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "\n[[services]]\nname = \"{name}\"\ncommand = [{}]\n",
        argv.join(", ")
    )
}

fn cell_json(run: &Path, key: &str) -> serde_json::Value {
    read(&run.join("cells").join(format!("{key}.json")))
}

/// The start-up timeout of the Python servers here: under two cores' contention (the other
/// tests, a build) Python took longer than the 1.5 s the fixtures give a compiled service.
/// What is tested does not depend on it but for the silent server, which fails either way.
pub const PYTHON_STARTUP: &str = "startup_timeout_ms = 10000";

#[test]
fn an_external_server_runs_through_the_whole_pipeline_and_bad_commands_fail_their_cells() {
    // Beside other load tests, not alone: what needed the CPUs here was the Python servers'
    // start-up, which PYTHON_STARTUP now allows for; nothing asserted depends on timing.
    let d = Scratch::new("byo");
    let script = d.0.join("responder.py");
    std::fs::write(&script, RESPONDER).unwrap();
    let s = script.to_str().unwrap();
    let mut services = external("py-ok", &["python3", s, "{host}", "{port}", "ok"]);
    services += &external("py-wrong", &["python3", s, "{host}", "{port}", "wrong"]);
    services += &external(
        "py-silent",
        &["python3", "-c", "import time; time.sleep(20)", "{port}"],
    );
    services += &external("no-such", &["./no-such-program", "--port", "{port}"]);
    let text = tiny_matrix(
        &[],
        2,
        &format!("baseline = \"py-ok\"\n{PYTHON_STARTUP}"),
        &services,
    );
    let m = write_config(&d.0, &text);
    let out_dir = d.0.join("out");
    let out = matrix_at(&m, &out_dir, &["run", "--quiet", "--only", "scenario=ping"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);

    let ok = cell_json(&run, "py-ok__ping__c4__pinned");
    assert_eq!(ok["status"], "ok", "{ok}");
    let rep = &ok["reps"][0];
    assert!(rep["report"]["counts"]["ok"].as_u64().unwrap() > 0, "{rep}");
    assert!(
        rep["server"]["cpu_us_per_request"].as_f64().is_some(),
        "{rep}"
    );
    assert!(ok["starts"][0]["first_200_us"].as_u64().is_some(), "{ok}");
    assert_eq!(ok["verification"][0]["passed"], true, "{ok}");
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(md.contains("external: runtime not reported"), "{md}");

    let reason = |key: &str| {
        let c = cell_json(&run, key);
        assert_eq!(c["status"], "failed", "{c}");
        c["failure"].to_string()
    };
    let wrong = reason("py-wrong__ping__c4__pinned");
    assert!(wrong.contains("body"), "{wrong}");
    let silent = reason("py-silent__ping__c4__pinned");
    assert!(
        silent.contains("startup") || silent.contains("200"),
        "{silent}"
    );
    let missing = reason("no-such__ping__c4__pinned");
    assert!(missing.contains("cannot start"), "{missing}");
}

/// A matrix file inside this checkout (variants are built from its history).
fn in_checkout(tag: &str, text: &str) -> (PathBuf, PathBuf) {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("byo-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    (write_config(&d, text), d.join("out"))
}

#[test]
fn bad_variants_and_commands_are_refused_before_anything_runs() {
    let ping = bin("ping-epoll");
    let base = tiny_matrix(&[("ping-epoll", ping, "")], 1, "", "");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let httparse = support::registry_crate("httparse");
    let patch_rows = [
        (
            "patch-not-a-dependency",
            "[[services.variants]]\nname = \"v\"\npatch = { tokio = { path = \".\" } }\n"
                .to_string(),
            "does not depend on tokio",
        ),
        (
            "patch-no-dir",
            "[[services.variants]]\nname = \"v\"\npatch = { httparse = { path = \"no-such-dir\" } }\n"
                .to_string(),
            "\"no-such-dir\" is not a directory",
        ),
        (
            "patch-no-manifest",
            "[[services.variants]]\nname = \"v\"\npatch = { httparse = { path = \".\" } }\n"
                .to_string(),
            "no Cargo.toml of the crate \"httparse\"",
        ),
        (
            "patch-other-package",
            format!(
                "[[services.variants]]\nname = \"v\"\npatch = {{ httparse = {{ path = {:?} }} }}\n",
                checkout.join("stamp").display().to_string()
            ),
            "is the package \"pingmatrix-stamp\", not \"httparse\"",
        ),
        (
            "patch-no-rev",
            format!(
                "[[services.variants]]\nname = \"v\"\npatch = {{ httparse = {{ git = {:?}, rev = \"no-such-rev\" }} }}\n",
                format!("file://{}", checkout.display())
            ),
            "revision \"no-such-rev\" does not exist",
        ),
        (
            "patch-git-without-rev",
            "[[services.variants]]\nname = \"v\"\npatch = { httparse = { git = \"https://example.invalid/h\" } }\n"
                .to_string(),
            "a `git` source needs a `rev`",
        ),
        (
            "patch-and-pin",
            format!(
                "[[services.variants]]\nname = \"v\"\npin = {{ httparse = \"1.10.1\" }}\npatch = {{ httparse = {{ path = {:?} }} }}\n",
                httparse.display().to_string()
            ),
            "httparse is both pinned (to \"1.10.1\") and patched",
        ),
    ];
    let rows = [
        (
            "unknown-key",
            "[[services.variants]]\nname = \"v\"\ntokio = \"1.51.0\"\n",
            "unknown field `tokio`",
        ),
        (
            "no-rev",
            "[[services.variants]]\nname = \"v\"\nrev = \"no-such-revision-here\"\n",
            "revision \"no-such-revision-here\" does not exist",
        ),
        (
            "bad-version",
            "[[services.variants]]\nname = \"v\"\npin = { tokio = \"latest\" }\n",
            "is not an exact version",
        ),
        (
            "no-port",
            "[[services]]\nname = \"x\"\ncommand = [\"python3\", \"-m\", \"http.server\"]\n",
            "has no {port} or {addr}",
        ),
        (
            "bad-placeholder",
            "[[services]]\nname = \"x\"\ncommand = [\"srv\", \"{prot}\"]\n",
            "unknown placeholder {prot}",
        ),
    ]
    .into_iter()
    .map(|(t, s, w)| (t.to_string(), s.to_string(), w))
    .chain(patch_rows.map(|(t, s, w)| (t.to_string(), s, w)));
    for (tag, service, want) in rows {
        let (tag, service) = (tag.as_str(), service.as_str());
        // A variants table belongs to the [[services]] entry before it; a service goes last.
        let text = if service.starts_with("[[services.variants]]") {
            base.replacen("\n[[scenarios]]", &format!("\n{service}\n[[scenarios]]"), 1)
        } else {
            format!("{base}{service}")
        };
        let (m, out_dir) = in_checkout(tag, &text);
        let out = matrix_at(&m, &out_dir, &["run", "--quiet"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{tag}: {}", out_text(&out));
        assert!(err.contains(want), "{tag}: want {want:?} in {err}");
        assert!(err.contains("m.toml:"), "{tag}: no location in {err}");
        assert!(!out_dir.exists(), "{tag}: a run directory was made");
    }
}

/// A pinned version the registry does not have: cargo's reason, the pin's location,
/// exit 2, and no run directory (needs the crate registry's index, like any cargo update).
#[test]
fn a_pin_that_does_not_resolve_is_refused_with_the_pins_location() {
    let base = tiny_matrix(
        &[("ping-tokio-hyper", bin("ping-tokio-hyper"), "")],
        1,
        "",
        "",
    );
    let variant = "[[services.variants]]\nname = \"never\"\npin = { tokio = \"0.0.99\" }\n";
    let text = base.replacen("\n[[scenarios]]", &format!("\n{variant}\n[[scenarios]]"), 1);
    let (m, out_dir) = in_checkout("unresolved", &text);
    let dir = m.parent().unwrap().join("variants");
    let out = matrix_at(&m, &out_dir, &["run", "--quiet"])
        .env("PINGMATRIX_VARIANTS_DIR", &dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        err.contains("m.toml:")
            && err.contains("pin tokio = \"0.0.99\"")
            && err.contains("does not resolve"),
        "{err}"
    );
    assert!(!out_dir.exists());
}

/// A variant whose build fails (its revision has no such binary) fails its own cells with
/// cargo's error; the service itself still runs and the run goes on (exit 1).
#[test]
fn a_variant_that_does_not_build_fails_its_cells_and_the_run_goes_on() {
    let base = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "");
    // a41b232: the workspace before ping-epoll existed.
    let variant = "[[services.variants]]\nname = \"old\"\nrev = \"a41b232\"\n";
    let text = base.replacen("\n[[scenarios]]", &format!("\n{variant}\n[[scenarios]]"), 1);
    let (m, out_dir) = in_checkout("unbuildable", &text);
    let dir = m.parent().unwrap().join("variants");
    let out = matrix_at(&m, &out_dir, &["run", "--quiet", "--only", "scenario=ping"])
        .env("PINGMATRIX_VARIANTS_DIR", &dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);
    assert_eq!(
        cell_json(&run, "ping-epoll__ping__c4__pinned")["status"],
        "ok"
    );
    let v = cell_json(&run, "ping-epoll@old__ping__c4__pinned");
    assert_eq!(v["status"], "failed", "{v}");
    let why = v["failure"].to_string();
    assert!(
        why.contains("could not be built") && why.contains("cargo build failed"),
        "{why}"
    );
    let rec: serde_json::Value = read(&run.join("run.json"));
    let variants = &rec["environment"]["variants"];
    assert_eq!(variants[0]["service"], "ping-epoll@old", "{variants}");
    assert!(
        variants[0]["commit"]
            .as_str()
            .unwrap()
            .starts_with("a41b232")
    );
    assert!(variants[0]["error"].as_str().is_some(), "{variants}");
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(
        md.contains("## Variants") && md.contains("✗ cargo build failed"),
        "{md}"
    );
}

/// A variant at this checkout's own HEAD builds and runs: every service is a workspace
/// member but only the runner is a default one, so the build must name the workspace
/// (the gate's variants failed with "no bin target named `ping-epoll`" before it did).
#[test]
fn a_variant_at_head_builds_and_serves() {
    let base = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "");
    let variant = "[[services.variants]]\nname = \"head\"\nrev = \"HEAD\"\n";
    let text = base.replacen("\n[[scenarios]]", &format!("\n{variant}\n[[scenarios]]"), 1);
    let (m, out_dir) = in_checkout("head", &text);
    let dir = m.parent().unwrap().join("variants");
    // Read before the run: the commit the variant resolves `HEAD` to as it starts.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=ping",
            "--only",
            "service=ping-epoll@head",
        ],
    )
    .env("PINGMATRIX_VARIANTS_DIR", &dir)
    // Cargo reads these for the variant's build: what is tested is that it builds and serves,
    // so one job (beside the load tests) and a quick optimiser.
    .env("CARGO_BUILD_JOBS", "1")
    .env("CARGO_PROFILE_RELEASE_LTO", "off")
    .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
    .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);
    let v = cell_json(&run, "ping-epoll@head__ping__c4__pinned");
    assert_eq!(v["status"], "ok", "{v}");
    let rec: serde_json::Value = read(&run.join("run.json"));
    let variant = &rec["environment"]["variants"][0];
    assert_eq!(
        variant["commit"].as_str(),
        Some(String::from_utf8_lossy(&head.stdout).trim()),
        "{variant}"
    );
    assert!(variant["error"].is_null(), "{variant}");
    assert!(variant["binary_sha256"].as_str().is_some(), "{variant}");
}

/// `--count-instructions` on a `command` server said "exited under Valgrind before its
/// start-up line (io_uring?)": the count ran it with `--listen/--workers` and waited for a
/// start-up line a command server does not print. It says so now, without running Valgrind.
#[test]
fn instructions_of_a_command_server_are_unmeasured_with_the_real_reason() {
    let d = Scratch::new("byo-instructions");
    let script = d.0.join("responder.py");
    std::fs::write(&script, RESPONDER).unwrap();
    let s = script.to_str().unwrap();
    let services = external("py-ok", &["python3", s, "{host}", "{port}", "ok"]);
    let text = tiny_matrix(&[], 1, PYTHON_STARTUP, &services)
        .replace("connections = [4]", "connections = [1]");
    let m = write_config(&d.0, &text);
    let out_dir = d.0.join("out");
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=ping",
            "--count-instructions",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let c = cell_json(&only_run_dir(&out_dir), "py-ok__ping__c1__pinned");
    let why = c["reps"][0]["instructions"]["unmeasured"].to_string();
    assert!(why.contains("a `command` server"), "{c}");
    assert!(!why.contains("io_uring"), "{why}");
}
