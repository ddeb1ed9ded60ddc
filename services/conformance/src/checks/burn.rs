//! `--burn-ns N` and `--burn-iters N`, the calibration knobs: `--burn-ns` reported in the
//! start-up line, both spent on every request (pipelined ones too), and out-of-range values
//! refused as usage errors.
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

/// Loop iterations per request for [`burn_iters_per_request`]: tens of milliseconds here.
const BURN_ITERS: u64 = 40_000_000;

/// The service spends the loop on every request: each takes at least a quarter of what the
/// same loop takes in this process (a quarter, so a busy machine slowing this process's own
/// run cannot fail a service that does the work).
pub fn burn_iters_per_request(bin: &str) {
    let start = Instant::now();
    std::hint::black_box(ping_common::burn::spin_iters(BURN_ITERS));
    let local = start.elapsed();
    let svc = Service::start(bin, &["--burn-iters", &BURN_ITERS.to_string()]);
    let mut c = Conn::open(svc.addr());
    let start = Instant::now();
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping").status, 200);
    let took = start.elapsed();
    assert!(
        took >= local / 4,
        "/ping answered in {took:?}, loop alone {local:?}"
    );
    let batch = [get("/ping", ""), get("/json", ""), get("/missing", "")].concat();
    let start = Instant::now();
    c.send_ok(&batch);
    for (i, want) in [200, 200, 404].into_iter().enumerate() {
        let r = c.expect_response(&format!("pipelined #{i}"));
        assert_eq!(r.status, want, "pipelined #{i}");
    }
    let took = start.elapsed();
    assert!(
        took >= 3 * local / 4,
        "3 pipelined requests in {took:?}, loop alone {local:?}"
    );
}

/// Negative, over 10^9 or not a number: exit code 2 and a message, before any start-up line.
pub fn burn_iters_out_of_range_exit_2(bin: &str) {
    for value in ["-1", "1000000001", "many"] {
        let out = Command::new(crate::binary::path(bin))
            .args(["--listen", "127.0.0.1:0", "--burn-iters", value])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bin} --burn-iters {value}");
        assert!(
            out.stdout.is_empty(),
            "{bin} --burn-iters {value}: wrote to stdout"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--burn-iters"),
            "{bin} --burn-iters {value}: unclear message {err:?}"
        );
    }
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
