//! Process-level contract: start-up line, CLI, worker count, SIGTERM.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ping_common::startup::deviation;

use crate::client::{Conn, get};
use crate::service::Service;

/// Every deviation id a service may declare; an unknown id means the suite cannot check it.
const KNOWN_DEVIATIONS: &[&str] = &[
    deviation::REASON_PHRASE_200,
    deviation::SERVER_HEADER,
    deviation::MAX_HEADERS_16,
    deviation::CONNECTION_CLOSE_IGNORED,
    deviation::NO_HEAD_SIZE_CAP,
    deviation::LIBRARY_ERROR_RESPONSES,
    deviation::STATUS_LINE_HTTP10,
    deviation::HEADER_ORDER_405,
    deviation::PIPELINE_ERROR_DROPS_BATCH,
    deviation::HALF_CLOSE_DROPS_REQUESTS,
    crate::expect::extra_deviation::HEADER_ORDER,
    crate::expect::extra_deviation::HEAD_LIMIT_128K,
    crate::expect::extra_deviation::CLOSE_ANSWERS_PIPELINED,
];

pub fn startup_line(bin: &str) {
    let svc = Service::start(bin, &[]);
    let s = &svc.startup;
    let raw: serde_json::Value = serde_json::from_str(svc.startup_raw.trim_end()).unwrap();
    for key in ping_common::startup::REQUIRED_FIELDS {
        assert!(raw.get(key).is_some(), "start-up line lacks {key:?}");
    }
    assert!(svc.startup_raw.ends_with('\n') && svc.startup_raw.matches('\n').count() == 1);
    assert_eq!(s.service, bin);
    assert_eq!(s.pid, svc.pid());
    assert_ne!(
        s.listen.port(),
        0,
        "listen must be the actual bound address"
    );
    assert!(s.listen.ip().is_loopback());
    assert!(
        s.runtime_version.split('.').count() == 3 && s.runtime_version != "unknown",
        "runtime_version {:?}",
        s.runtime_version
    );
    assert!(
        ["epoll", "io_uring"].contains(&s.io_driver.as_str()),
        "{}",
        s.io_driver
    );
    assert_eq!(s.burn_ns, 0, "--burn-ns defaults to 0");
    // The one list of services says the same as the service itself.
    let listed = ping_catalogue::find(&s.service)
        .unwrap_or_else(|| panic!("{} is not in services/services.toml", s.service));
    assert_eq!(
        (raw["runtime"].as_str(), raw["model"].as_str()),
        (Some(listed.runtime.as_str()), Some(listed.model.as_str())),
        "start-up line vs services/services.toml"
    );
    let drivers: &[&str] = match listed.io_driver.as_str() {
        "io_uring-or-epoll" => &["io_uring", "epoll"],
        one => &[one],
    };
    assert!(
        drivers.contains(&s.io_driver.as_str()),
        "io_driver {:?}, services/services.toml says {:?}",
        s.io_driver,
        listed.io_driver
    );
    // Default workers: the CPUs this process (and so its child) may run on.
    assert_eq!(s.workers, ping_common::cpus::allowed_cpu_count());
    for d in &s.deviations {
        assert!(
            KNOWN_DEVIATIONS.contains(&d.id.as_str()),
            "unknown deviation {d:?}"
        );
        assert!(!d.detail.is_empty(), "deviation {} has no detail", d.id);
    }
    // The port really serves, and nothing else appears on stdout.
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping").status, 200);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        svc.extra_stdout(),
        "",
        "stdout must hold only the start-up line"
    );
}

pub fn workers_flag(bin: &str) {
    let svc = Service::start(bin, &["--workers", "3"]);
    assert_eq!(svc.startup.workers, 3);
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping").status, 200);
}

/// Default worker count follows the affinity mask (as `taskset -c <cpu>` sets it).
pub fn workers_follow_affinity(bin: &str) {
    let cpu = *ping_common::cpus::allowed_cpus()
        .last()
        .expect("at least one allowed cpu");
    let svc = Service::start_with(bin, &[], |cmd| {
        // SAFETY: only async-signal-safe calls (sched_setaffinity) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    });
    assert_eq!(svc.startup.workers, 1, "one allowed CPU → one worker");
    assert_eq!(svc.startup.allowed_cpus, vec![cpu]);
}

pub fn bad_cli_args_exit_2(bin: &str) {
    let path = crate::binary::path(bin);
    for args in [
        &["--workers", "0"][..],
        &["--workers", "lots"],
        &["--listen", "not-an-address"],
        &["--no-such-flag"],
        &["stray"],
    ] {
        let out = Command::new(&path)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bin} {args:?}");
        assert!(out.stdout.is_empty(), "{bin} {args:?}: wrote to stdout");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("error"),
            "{bin} {args:?}: unclear message {err:?}"
        );
    }
    let help = Command::new(&path).arg("--help").output().expect("run");
    assert_eq!(help.status.code(), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("--listen") && text.contains("--workers"),
        "{text}"
    );
}

/// A port already held (even by a SO_REUSEPORT socket) is an error, not silent sharing.
pub fn taken_port_is_an_error(bin: &str) {
    let first = Service::start(bin, &[]);
    let out = Command::new(crate::binary::path(bin))
        .args(["--listen", &first.addr().to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    assert_ne!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "no start-up line on failure");
    assert!(!out.stderr.is_empty(), "a message on stderr");
}

pub fn sigterm_exits_promptly(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    // With an idle keep-alive connection open: it must not hold the process up.
    let mut c = Conn::open(svc.addr());
    c.send_ok(&get("/ping", ""));
    c.expect_response("/ping");
    svc.signal(libc::SIGTERM);
    let status = svc.wait_exit(Duration::from_secs(3));
    assert!(status.is_some(), "{bin} still running 3 s after SIGTERM");
}

/// The reported `io_driver` matches the process's fds, counted from outside: an io_uring
/// runtime holds one `anon_inode:[io_uring]` fd per worker, an epoll one none. Also with
/// monoio's fallback forced (`MONOIO_FORCE_LEGACY_DRIVER=1`), which must then say `epoll`.
pub fn io_driver_is_real(bin: &str) {
    for force_legacy in [false, true] {
        let svc = Service::start_with(bin, &["--workers", "2"], |cmd| {
            if force_legacy {
                cmd.env("MONOIO_FORCE_LEGACY_DRIVER", "1");
            }
        });
        let fds = std::fs::read_dir(format!("/proc/{}/fd", svc.pid()))
            .expect("read /proc/<pid>/fd")
            .filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|t| t.as_os_str() == "anon_inode:[io_uring]")
            .count();
        let s = &svc.startup;
        match s.io_driver.as_str() {
            "epoll" => assert_eq!(fds, 0, "reports epoll but holds {fds} io_uring fds"),
            "io_uring" => {
                // The variable is monoio's; other io_uring runtimes have no such fallback.
                assert!(
                    !force_legacy || s.runtime != "monoio",
                    "legacy driver forced, still reports io_uring"
                );
                assert!(fds >= s.workers, "reports io_uring with {fds} ring fds");
            }
            other => panic!("io_driver {other:?}"),
        }
        if let Some(n) = s.io_uring_fds {
            assert_eq!(n, fds, "self-reported io_uring_fds");
        }
    }
}

/// The listen backlog is the contract's (`ping_common::listen::LISTEN_BACKLOG`, capped by
/// `net.core.somaxconn`) on every listener of the service, read from outside: the Send-Q of a
/// LISTEN socket in `ss -ltn` is its backlog.
pub fn listen_backlog(bin: &str) {
    let svc = Service::start(bin, &["--workers", "2"]);
    let Some(backlogs) = crate::ss::listen_backlogs(bin, svc.addr().port()) else {
        return;
    };
    assert!(!backlogs.is_empty(), "{bin}: no LISTEN socket on its port");
    let want = ping_common::listen::effective_backlog() as u32;
    assert!(
        backlogs.iter().all(|&b| b == want),
        "{bin}: listen backlogs {backlogs:?}, the contract says {want} \
         (min of {} and net.core.somaxconn)",
        ping_common::listen::LISTEN_BACKLOG
    );
}

/// SO_REUSEADDR, from outside: the service is killed with connections open (so the server's
/// side of each closes first and sits in TIME_WAIT once the client closes too) and restarted
/// on the same port at once; it must bind and serve.
pub fn rebind_after_time_wait(bin: &str) {
    let mut svc = Service::start(bin, &[]);
    let addr = svc.addr();
    let mut conns: Vec<Conn> = (0..4).map(|_| Conn::open(addr)).collect();
    for c in &mut conns {
        c.send_ok(&get("/ping", ""));
        c.expect_response("/ping");
    }
    svc.signal(libc::SIGKILL);
    assert!(
        svc.wait_exit(Duration::from_secs(5)).is_some(),
        "{bin} survived SIGKILL"
    );
    for mut c in conns {
        // The server's FIN came first; ours follows on drop → TIME_WAIT on the server's port.
        assert!(
            c.closes_within(Duration::from_secs(3)),
            "not closed by the kill"
        );
    }
    drop(svc);
    // The last FINs may still be on their way: wait (bounded) until TIME_WAIT shows.
    let deadline = Instant::now() + Duration::from_secs(2);
    while let Some(n) = crate::ss::time_wait_count(bin, addr.port()) {
        if n > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{bin}: no TIME_WAIT socket on port {} to test with",
            addr.port()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let again = Service::start_at(bin, &addr.to_string(), &[], |_| {});
    assert_eq!(again.addr(), addr);
    let mut c = Conn::open(addr);
    c.send_ok(&get("/ping", ""));
    assert_eq!(c.expect_response("/ping after restart").status, 200);
}
