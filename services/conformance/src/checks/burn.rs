//! `--burn-ns N`, `--burn-iters N`, `--burn-syscalls N` and `--burn-faults N`, the calibration
//! knobs: reported in the start-up line, spent on every request (pipelined ones too; the
//! syscalls and page faults counted by the kernel), and out-of-range values refused as usage
//! errors.
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

/// Loop iterations per request for [`burn_iters_per_request`]: about 70 ms in these debug
/// builds, where a request without the loop takes well under one.
const BURN_ITERS: u64 = 10_000_000;

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

/// `flag value` for each of `values`: exit code 2 and a message naming the flag (and
/// `also`), nothing on stdout: the service exits before it binds anything.
fn refused(bin: &str, flag: &str, values: &[&str], also: &str) {
    for value in values {
        let out = Command::new(crate::binary::path(bin))
            .args(["--listen", "127.0.0.1:0", flag, value])
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bin} {flag} {value}");
        assert!(
            out.stdout.is_empty(),
            "{bin} {flag} {value}: wrote to stdout"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(flag) && err.contains(also),
            "{bin} {flag} {value}: unclear message {err:?}"
        );
    }
}

/// Negative, over 10^9 or not a number: refused.
pub fn burn_iters_out_of_range_exit_2(bin: &str) {
    refused(bin, "--burn-iters", &["-1", "1000000001", "many"], "");
}

/// Negative or over 1 s: refused, naming the range.
pub fn burn_ns_out_of_range_exit_2(bin: &str) {
    refused(
        bin,
        "--burn-ns",
        &["-1", "2000000000"],
        "is not in 0..=1000000000",
    );
}

/// Requests and `--burn-syscalls` for [`burn_syscalls_per_request`]: 20 getppid calls.
const SYSCALL_REQUESTS: u32 = 100;
const SYSCALL_EVERY: u32 = 5;

/// The workload perf counts the service during: `SYSCALL_REQUESTS` sequential /ping on one
/// kept-alive connection (Python: perf runs it, so counting starts before the first request).
const SEQUENTIAL_PINGS: &str = r#"
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
buf = b""
for i in range(int(sys.argv[3])):
    s.sendall(b"GET /ping HTTP/1.1\r\nHost: conformance\r\n\r\n")
    while buf.count(b"pong") <= i:
        chunk = s.recv(65536)
        if not chunk:
            sys.exit("connection closed after %d responses" % i)
        buf += chunk
"#;

/// How many times `event` fired in `svc` while it answered `requests` sequential pings on one
/// connection (`perf stat -e event -p`, which runs the pings, so counting starts before the
/// first); None, with a SKIPPED line naming `check`, where perf or the event is not available.
fn perf_count(bin: &str, svc: &Service, check: &str, event: &str, requests: u32) -> Option<u64> {
    let addr = svc.addr();
    let out = Command::new(std::env::var("PINGMATRIX_PERF").unwrap_or_else(|_| "perf".into()))
        .args(["stat", "-x,", "-e", event, "-p"])
        .arg(svc.pid().to_string())
        .args(["--", "python3", "-c", SEQUENTIAL_PINGS])
        .args([addr.ip().to_string(), addr.port().to_string()])
        .arg(requests.to_string())
        .stdin(Stdio::null())
        .output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stderr).into_owned(),
        Ok(o) => {
            eprintln!(
                "SKIPPED {bin} {check}: perf stat failed: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Err(e) => {
            eprintln!("SKIPPED {bin} {check}: no perf: {e}");
            return None;
        }
    };
    // The count's line: the one naming the event (its part after `subsystem:`).
    let name = event.rsplit(':').next().unwrap_or(event);
    let n = text
        .lines()
        .find(|l| l.contains(name))
        .and_then(|l| l.split(',').next()?.trim().parse().ok());
    if n.is_none() {
        eprintln!("SKIPPED {bin} {check}: no {event} count in {text:?}");
    }
    n
}

/// `--burn-syscalls N`: reported in the start-up line, and exactly one `getppid` every N
/// requests, counted by the kernel's tracepoint under `perf stat` (skipped, saying so, where
/// perf or its tracepoints are not available).
pub fn burn_syscalls_per_request(bin: &str) {
    let svc = Service::start(bin, &["--burn-syscalls", &SYSCALL_EVERY.to_string()]);
    assert_eq!(
        svc.startup.burn_syscalls,
        u64::from(SYSCALL_EVERY),
        "{}",
        svc.startup_raw
    );
    let Some(counted) = perf_count(
        bin,
        &svc,
        "burn_syscalls_per_request",
        "syscalls:sys_enter_getppid",
        SYSCALL_REQUESTS,
    ) else {
        return;
    };
    assert_eq!(
        counted,
        u64::from(SYSCALL_REQUESTS / SYSCALL_EVERY),
        "{bin}: getppid calls for {SYSCALL_REQUESTS} requests at --burn-syscalls {SYSCALL_EVERY}"
    );
}

/// Negative, over 10^6 or not a number: refused.
pub fn burn_syscalls_out_of_range_exit_2(bin: &str) {
    refused(bin, "--burn-syscalls", &["-1", "1000001", "often"], "");
}

/// Responses and `--split-write-every` for [`split_write_per_request`]: 20 split writes.
const SPLIT_REQUESTS: u32 = 100;
const SPLIT_EVERY: u32 = 5;

/// `--split-write-every N`: reported in the start-up line, and exactly one more socket send
/// every N responses (the kernel's `sock:sock_send_length`, one per `sock_sendmsg`: write,
/// send and io_uring's send alike) under `perf stat` on sequential pings (skipped, saying so,
/// where perf or the tracepoint are not available). Services whose library writes responses
/// itself refuse the flag (exit 2, saying why).
pub fn split_write_per_request(bin: &str) {
    if ping_common::split::UNSUPPORTED.contains(&bin) {
        refused(bin, "--split-write-every", &["5"], "not supported");
        return;
    }
    let sends = |args: &[&str]| -> Option<u64> {
        let svc = Service::start(bin, args);
        perf_count(
            bin,
            &svc,
            "split_write_per_request",
            "sock:sock_send_length",
            SPLIT_REQUESTS,
        )
    };
    let every = SPLIT_EVERY.to_string();
    let svc = Service::start(bin, &["--split-write-every", &every]);
    assert_eq!(
        svc.startup.split_write_every,
        u64::from(SPLIT_EVERY),
        "{}",
        svc.startup_raw
    );
    drop(svc);
    let (Some(plain), Some(split)) = (sends(&[]), sends(&["--split-write-every", &every])) else {
        return;
    };
    // Against the same service without the flag: whatever else it sends (nothing, here) cancels.
    assert_eq!(
        split - plain,
        u64::from(SPLIT_REQUESTS / SPLIT_EVERY),
        "{bin}: socket sends for {SPLIT_REQUESTS} responses: {plain} plain, {split} at --split-write-every {SPLIT_EVERY}"
    );
}

/// Negative, over 10^6 or not a number: refused.
pub fn split_write_out_of_range_exit_2(bin: &str) {
    refused(bin, "--split-write-every", &["-1", "1000001", "often"], "");
}

/// Requests and `--burn-faults` for [`burn_faults_per_request`].
const FAULT_REQUESTS: u64 = 400;
const FAULTS: u64 = 4;

/// The process's minor page faults so far (`/proc/<pid>/stat`, every thread's, living or not).
fn minor_faults(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the service's stat");
    // After the command name's closing parenthesis: state is field 3, minflt field 10.
    let rest = &stat[stat.rfind(')').expect("comm") + 1..];
    rest.split_whitespace()
        .nth(7)
        .and_then(|f| f.parse().ok())
        .expect("minflt")
}

/// `n` sequential pings on one connection, answered.
fn pings(addr: std::net::SocketAddr, n: u64) {
    let out = Command::new("python3")
        .args(["-c", SEQUENTIAL_PINGS])
        .args([
            addr.ip().to_string(),
            addr.port().to_string(),
            n.to_string(),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--burn-faults N`: reported in the start-up line, and N more minor page faults per request
/// than the same service without it (the kernel's count in /proc, no perf needed), over
/// sequential pings after a warm-up.
pub fn burn_faults_per_request(bin: &str) {
    let faults = |args: &[&str]| -> (u64, String) {
        let svc = Service::start(bin, args);
        pings(svc.addr(), 50);
        let before = minor_faults(svc.pid());
        pings(svc.addr(), FAULT_REQUESTS);
        (minor_faults(svc.pid()) - before, svc.startup_raw.clone())
    };
    let (plain, _) = faults(&[]);
    let (burnt, line) = faults(&["--burn-faults", &FAULTS.to_string()]);
    assert!(
        line.contains(&format!("\"burn_faults\":{FAULTS}")),
        "start-up line does not report burn_faults: {line}"
    );
    let added = burnt.saturating_sub(plain);
    let want = FAULTS * FAULT_REQUESTS;
    // A fault or two of the service's own either way (an allocator growing in one run).
    assert!(
        added.abs_diff(want) <= want / 20,
        "{bin}: {burnt} faults with --burn-faults {FAULTS}, {plain} without, over {FAULT_REQUESTS} requests: \
         {added} added, want {want}"
    );
}

pub fn burn_faults_out_of_range_exit_2(bin: &str) {
    refused(bin, "--burn-faults", &["-1", "65", "often"], "");
}
