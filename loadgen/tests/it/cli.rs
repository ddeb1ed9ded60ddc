//! The binary's contract: exit 2 with a clear message on bad input, 1 when the target
//! refuses every connection (still printing the report), JSON-only stdout with `--json -`,
//! and `--spec` files as the runner passes them.

use std::io::Write;
use std::process::{Command, Stdio};

use loadgen::Report;
use loadgen::report::{IoBackend, Receive};

use crate::support::{Mode, TestServer, closed, loadgen, without_io_uring};

#[test]
fn bad_arguments_exit_2_with_a_message() {
    for (args, needle) in [
        (&["ftp://127.0.0.1:1/"][..], "scheme"),
        (&["not a url"][..], "scheme"),
        (&["http://:80/"][..], "host"),
        (&["http://127.0.0.1:1/", "-c", "0"][..], "connections"),
        (&["http://127.0.0.1:1/", "-R", "0"][..], "rate"),
        (&["http://127.0.0.1:1/", "-R", "-5"][..], "rate"),
        (
            &["http://127.0.0.1:1/", "-R", "10", "--pipeline", "2"][..],
            "pipeline",
        ),
        (
            &["http://127.0.0.1:1/", "--pipeline", "4", "--no-keepalive"][..],
            "keep-alive",
        ),
        (
            &["http://127.0.0.1:1/", "-t", "4", "-c", "2"][..],
            "threads",
        ),
        (&["http://127.0.0.1:1/", "-d", "soon"][..], "duration"),
        (
            &["http://127.0.0.1:1/", "-d", "9223372036854775s"][..],
            "duration",
        ),
        (&["http://127.0.0.1:1/", "--warmup", "25h"][..], "warm-up"),
        (&["http://127.0.0.1:1/", "--timeout", "2h"][..], "timeout"),
        (
            &["http://127.0.0.1:1/", "-R", "1e10", "-d", "1s"][..],
            "rate",
        ),
        (&["http://127.0.0.1:1/", "-R", "0.00001"][..], "rate"),
        (
            &["http://127.0.0.1:1/", "-R", "10", "--coalesce-us", "20000"][..],
            "coalescing",
        ),
        (
            &["http://127.0.0.1:1/", "--coalesce-us", "100"][..],
            "--rate",
        ),
        (
            &["http://127.0.0.1:1/", "-R", "10", "--coalesce-us=-1"][..],
            "coalesce",
        ),
        (&["http://127.0.0.1:1/", "-c", "4000000"][..], "connections"),
        (
            &["http://127.0.0.1:1/", "-t", "2000", "-c", "2000"][..],
            "threads",
        ),
        (&["http://127.0.0.1:1/", "-H", "no colon"][..], "header"),
        (&["http://127.0.0.1:1/", "--bogus"][..], "bogus"),
        (&["http://127.0.0.1:1/", "--io", "kqueue"][..], "--io"),
        (
            &["http://127.0.0.1:1/", "-R", "10", "--io", "uring"][..],
            "open loop runs on epoll",
        ),
        (&["--spec", "-", "-c", "8"][..], "cannot be used with"),
        (&[][..], "URL"),
    ] {
        let out = loadgen(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.to_lowercase().contains(&needle.to_lowercase()),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn refused_target_exits_1_and_still_reports() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = loadgen(&[
        &format!("http://127.0.0.1:{port}/"),
        "-c",
        "2",
        "-d",
        "3s",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let r: loadgen::Report = serde_json::from_slice(&out.stdout).expect("a report on stdout");
    assert_eq!(r.connections.established, 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused"));
}

#[test]
fn spec_from_stdin_as_the_runner_passes_it() {
    let srv = TestServer::start(Mode::Ok);
    let mut spec = closed(srv.url(), 2, 1);
    spec.requests = Some(100);
    let mut child = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["--spec", "-", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&spec).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: loadgen::Report = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r.spec, spec);
    assert_eq!(r.counts.ok, 100);

    // An invalid spec is bad input too.
    let dir = std::env::temp_dir().join(format!("loadgen-spec-{}.json", std::process::id()));
    spec.threads = 0;
    std::fs::write(&dir, serde_json::to_string(&spec).unwrap()).unwrap();
    let out = loadgen(&["--spec", dir.to_str().unwrap()]);
    let _ = std::fs::remove_file(&dir);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn text_summary_by_default() {
    let srv = TestServer::start(Mode::Ok);
    let out = loadgen(&[&srv.url(), "-c", "2", "-n", "200"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Requests/sec:"), "{text}");
    assert!(text.contains("sent 200 = ok 200"), "{text}");
}

/// A process that may not set up io_uring (here a seccomp filter, as a container runtime or
/// `kernel.io_uring_disabled` would refuse it): `--io auto` falls back to epoll and the
/// report says why; `--io uring` is bad input for this host (exit 2). Unrestricted, auto
/// picks io_uring on this kernel.
#[test]
fn without_io_uring_auto_falls_back_to_epoll_and_uring_exits_2() {
    let srv = TestServer::start(Mode::Ok);
    let url = srv.url();
    let run = |extra: &[&str], restricted: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_loadgen"));
        cmd.args([url.as_str(), "-c", "2", "-n", "100", "--json", "-"])
            .args(extra);
        if restricted {
            without_io_uring(&mut cmd);
        }
        cmd.output().expect("run the loadgen binary")
    };
    let report = |out: &std::process::Output| -> Report {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("a JSON report")
    };

    let r = report(&run(&[], true));
    assert_eq!(r.counts.ok, 100, "{:?}", r.counts);
    let io = r.generator.io.expect("the report says which backend ran");
    assert_eq!(io.backend, IoBackend::Epoll, "{io:?}");
    assert!(
        io.reason.contains("unavailable") && io.reason.contains("not permitted"),
        "{io:?}"
    );

    let out = run(&["--io", "uring"], true);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("io_uring is unavailable"), "{err}");
    assert!(out.stdout.is_empty());

    let r = report(&run(&[], false));
    let io = r.generator.io.expect("the report says which backend ran");
    assert_eq!(io.backend, IoBackend::Uring, "{io:?}");
    assert_eq!(r.counts.ok, 100, "{:?}", r.counts);
    // This kernel (6.10+) receives multishot; --io uring-oneshot asks for one-shot.
    let receive = io.receive.expect("io_uring says how it receives");
    assert_eq!(receive.mode, Receive::Multishot, "{receive:?}");
    let r = report(&run(&["--io", "uring-oneshot"], false));
    let io = r.generator.io.expect("the report says which backend ran");
    assert_eq!(io.backend, IoBackend::Uring, "{io:?}");
    let receive = io.receive.expect("io_uring says how it receives");
    assert_eq!(receive.mode, Receive::OneShot, "{receive:?}");
    assert!(receive.reason.contains("--io uring-oneshot"), "{receive:?}");
    assert_eq!(r.counts.ok, 100, "{:?}", r.counts);
    let out = run(&["--io", "uring-oneshot"], true);
    assert_eq!(out.status.code(), Some(2));
    // The text report names the receive mode under the I/O line.
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args([url.as_str(), "-c", "2", "-n", "100", "--io", "uring"])
        .output()
        .expect("run the loadgen binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("receives: multishot into provided buffers"),
        "{text}"
    );
}

/// `--version` says the version number first (C6), then the method identity the runner
/// matches runs on, then the build stamp; `-V` is the version alone.
#[test]
fn version_prints_the_number_the_method_identity_and_the_stamp() {
    let out = loadgen(&["--version"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], concat!("loadgen ", env!("CARGO_PKG_VERSION")));
    let id = lines[1].strip_prefix("method: ").expect("a method line");
    let parts = loadgen::identity::parse(id).expect("an identity");
    assert_eq!(parts.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(parts.src.len(), 16);
    assert!(lines[2].starts_with("pingmatrix-build commit="), "{text}");
    let short = loadgen(&["-V"]);
    assert_eq!(
        String::from_utf8_lossy(&short.stdout).trim(),
        concat!("loadgen ", env!("CARGO_PKG_VERSION"))
    );
}
