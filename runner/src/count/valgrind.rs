//! Instructions per request without a PMU (`matrix run --count-instructions`): the service
//! runs under `valgrind --tool=cachegrind --cache-sim=no` twice, serving N1 and then N2
//! sequential requests on one kept-alive connection; the slope (I2 − I1) / (N2 − N1) is
//! its user-space instructions per request, start-up, readiness and shutdown cancelling.
//! The kernel's instructions are not counted. A service Valgrind cannot run as it runs
//! normally (io_uring: Valgrind does not implement it) is unmeasured with the reason, never 0.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ping_common::startup::StartupLine;

use crate::results::schema::InstructionCount;
use crate::service::http;

/// The two request counts of the slope (c1, one connection).
pub const REQUESTS: (u64, u64) = (2_000, 6_000);
/// How long a service may take to print its start-up line under Valgrind.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long it may take to exit (and Valgrind to write its counts) after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// What one measurement needs.
pub struct Target<'a> {
    pub binary: &'a Path,
    pub service_args: &'a [String],
    pub path: &'a str,
    /// The I/O driver the service reported when it ran normally; a different one under
    /// Valgrind (a fallback) would count another program.
    pub io_driver: Option<&'a str>,
    pub cpus: &'a [u32],
    pub scratch_dir: &'a Path,
}

/// `valgrind --version` (`valgrind-3.19.0`), or why there is none.
pub fn version() -> Result<String, String> {
    let out = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| format!("no valgrind: {e}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn tool(version: &str) -> String {
    format!(
        "{version} --tool=cachegrind --cache-sim=no (user space only; the load's own request bytes)"
    )
}

/// A `command` server's instructions are not counted: it is run with its own argument
/// template and prints no start-up line, which the count's own starts under Valgrind need.
pub fn not_for_command() -> InstructionCount {
    InstructionCount {
        unmeasured: Some(
            "a `command` server: instructions are counted only for the suite's own services \
             (the count starts the service under Valgrind with --listen/--workers and waits for \
             its start-up line, which a command server does not have)"
                .into(),
        ),
        tool: "valgrind".into(),
        ..Default::default()
    }
}

/// Instructions per request of `t`, or `unmeasured` with the reason.
pub fn measure(t: &Target) -> InstructionCount {
    let version = match version() {
        Ok(v) => v,
        Err(e) => {
            return InstructionCount {
                unmeasured: Some(e),
                tool: "valgrind".into(),
                ..Default::default()
            };
        }
    };
    let mut points = Vec::new();
    for n in [REQUESTS.0, REQUESTS.1] {
        match run_once(t, n) {
            Ok(i) => points.push((n, i)),
            Err(e) => {
                return InstructionCount {
                    unmeasured: Some(e),
                    tool: tool(&version),
                    points,
                    per_request: None,
                };
            }
        }
    }
    InstructionCount {
        per_request: slope(&points),
        unmeasured: None,
        tool: tool(&version),
        points,
    }
}

/// (I2 − I1) / (N2 − N1) of two points.
pub fn slope(points: &[(u64, u64)]) -> Option<f64> {
    let [(n1, i1), (n2, i2)] = points else {
        return None;
    };
    (n2 > n1 && i2 >= i1).then(|| (i2 - i1) as f64 / (n2 - n1) as f64)
}

/// The `summary:` line of a cachegrind out file: the program's total instructions.
pub fn summary(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Kills the whole group on drop, so a Valgrind that hangs (io_uring) is never left behind.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group our child leads.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// One run under Valgrind serving `n` requests; its total instruction count.
fn run_once(t: &Target, n: u64) -> Result<u64, String> {
    let addr = crate::service::spawn::free_addr([127, 0, 0, 1].into())
        .map_err(|e| format!("no free port: {e}"))?;
    let out: PathBuf = t
        .scratch_dir
        .join(format!("cachegrind-{}-{n}.out", addr.port()));
    let mut cmd = Command::new("valgrind");
    cmd.args(["--tool=cachegrind", "--cache-sim=no"])
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg(t.binary)
        .args(["--listen", &addr.to_string(), "--workers", "1"])
        .args(t.service_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    let child = crate::limits::cpus::on_cpus(t.cpus, || cmd.spawn())
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    let mut group = Group(child);
    let line = first_line(&mut group.0)?;
    let startup = StartupLine::parse(&line).map_err(|e| format!("start-up line: {e}"))?;
    if let Some(want) = t.io_driver
        && startup.io_driver != want
    {
        return Err(format!(
            "under Valgrind the service runs {} instead of {want}",
            startup.io_driver
        ));
    }
    serve(addr, t.path, n)?;
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(group.0.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_TIMEOUT;
    while group.0.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            return Err(format!(
                "did not exit within {} s of SIGTERM under Valgrind",
                STOP_TIMEOUT.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("no cachegrind output: {e}"));
    let _ = std::fs::remove_file(&out);
    summary(&text?).ok_or_else(|| "cachegrind output without a summary line".to_owned())
}

/// The service's first stdout line, waited for up to [`START_TIMEOUT`].
fn first_line(child: &mut Child) -> Result<String, String> {
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    match rx.recv_timeout(START_TIMEOUT) {
        Ok(l) if !l.trim().is_empty() => Ok(l),
        Ok(_) => Err("exited under Valgrind before its start-up line (io_uring?)".into()),
        Err(_) => Err(format!(
            "no start-up line within {} s under Valgrind (io_uring is not supported by Valgrind)",
            START_TIMEOUT.as_secs()
        )),
    }
}

/// `n` sequential GETs of `path` on one connection, each answered 200: loadgen's own request
/// bytes for the cell (no header of the runner's own), so the count is that of the requests
/// the timed load sends — a `User-Agent` more cost ping-epoll 9.6 % more instructions.
fn serve(addr: SocketAddr, path: &str, n: u64) -> Result<(), String> {
    let target = loadgen::http::target::resolve(&format!("http://{addr}{path}"))
        .map_err(|e| format!("request target: {e}"))?;
    let request = loadgen::http::request::RequestBytes::new(&target, &[], true, 1).batch;
    let timeout = Duration::from_secs(10);
    let deadline = Instant::now() + START_TIMEOUT;
    let mut s = loop {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => return Err(format!("connect: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    for i in 0..n {
        let r = http::exchange(&mut s, &request, Instant::now())?;
        if r.status != 200 {
            return Err(format!("request {i} answered {}", r.status));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_and_summary() {
        assert_eq!(
            slope(&[(2000, 4_736_943), (6000, 13_336_919)]),
            Some(2149.994)
        );
        assert_eq!(slope(&[(2000, 5)]), None);
        assert_eq!(slope(&[(6000, 5), (2000, 9)]), None);
        let text = "desc: I1 cache:\ncmd: x\nevents: Ir\nfl=a\n1 2\nsummary: 4736943\n";
        assert_eq!(summary(text), Some(4_736_943));
        assert_eq!(summary("events: Ir\n"), None);
    }

    /// The whole mode end to end on ping-epoll (built by `cargo build -p ping-epoll`):
    /// two Valgrind runs, a slope in the range of a few thousand instructions.
    #[test]
    fn counts_ping_epoll_under_valgrind() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let bin = ["target/release/ping-epoll", "target/debug/ping-epoll"]
            .iter()
            .map(|p| root.join(p))
            .find(|p| p.exists());
        let (Some(bin), Ok(_)) = (bin, version()) else {
            eprintln!("skipped: needs valgrind and a built ping-epoll");
            return;
        };
        let scratch = std::env::temp_dir();
        let c = measure(&Target {
            binary: &bin,
            service_args: &[],
            path: "/ping",
            io_driver: Some("epoll"),
            cpus: &[],
            scratch_dir: &scratch,
        });
        assert!(c.unmeasured.is_none(), "{c:?}");
        let per = c.per_request.unwrap();
        assert!((500.0..200_000.0).contains(&per), "{c:?}");
        assert!(c.tool.starts_with("valgrind-"), "{c:?}");
        // A different driver under Valgrind than outside it is refused, not counted.
        let c = measure(&Target {
            binary: &bin,
            service_args: &[],
            path: "/ping",
            io_driver: Some("io_uring"),
            cpus: &[],
            scratch_dir: &scratch,
        });
        assert!(c.per_request.is_none(), "{c:?}");
        assert!(c.unmeasured.unwrap().contains("instead of io_uring"));
    }
}
