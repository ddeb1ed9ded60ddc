//! `--burn-ns N`, the calibration knob: reported in the start-up line, spent on every request
//! (pipelined ones too), and out-of-range values refused as usage errors.
//!
//! Times are checked as lower bounds only: an upper bound would flake on a shared machine.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::client::{Conn, get};
use crate::service::Service;

const BURN_NS: u64 = 2_000_000;

pub fn burn_ns_per_request(bin: &str) {
    let svc = Service::start(bin, &["--burn-ns", &BURN_NS.to_string()]);
    assert!(
        svc.startup_raw.contains(&format!("\"burn_ns\":{BURN_NS}")),
        "start-up line does not report burn_ns: {}",
        svc.startup_raw
    );
    assert_eq!(svc.startup.burn_ns, BURN_NS);
    let per_request = Duration::from_nanos(BURN_NS);
    let mut c = Conn::open(svc.addr());
    let start = Instant::now();
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping").status, 200);
    let took = start.elapsed();
    assert!(took >= per_request, "/ping answered in {took:?}");
    // Three pipelined requests, three routes: each one is charged.
    let batch = [get("/ping", ""), get("/json", ""), get("/missing", "")].concat();
    let start = Instant::now();
    c.send_ok(&batch);
    for (i, want) in [200, 200, 404].into_iter().enumerate() {
        let r = c.expect_response(&format!("pipelined #{i}"));
        assert_eq!(r.status, want, "pipelined #{i}");
    }
    let took = start.elapsed();
    assert!(took >= 3 * per_request, "3 pipelined requests in {took:?}");
}

/// Negative or over 1 s: exit code 2 and a message, before any start-up line.
pub fn burn_ns_out_of_range_exit_2(bin: &str) {
    for value in ["-1", "2000000000"] {
        let out = Command::new(crate::binary::path(bin))
            .args(["--listen", "127.0.0.1:0", "--burn-ns", value])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bin} --burn-ns {value}");
        assert!(
            out.stdout.is_empty(),
            "{bin} --burn-ns {value}: wrote to stdout"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--burn-ns") && err.contains("is not in 0..=1000000000"),
            "{bin} --burn-ns {value}: unclear message {err:?}"
        );
    }
}
