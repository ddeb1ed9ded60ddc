//! Instructions per request without a PMU (`matrix run --count-instructions`): the service
//! runs under `valgrind --tool=cachegrind --cache-sim=no --fair-sched=yes` twice, serving N1
//! and then N2 sequential requests on one kept-alive connection; the slope
//! (I2 − I1) / (N2 − N1) is its user-space instructions per request, start-up, readiness and
//! shutdown cancelling.
//! The kernel's instructions are not counted. A service Valgrind cannot run as it runs
//! normally (another I/O driver than outside Valgrind, no start-up line) is unmeasured with
//! the reason, never 0.
//!
//! io_uring services (monoio, glommio, compio) are counted on their io_uring driver. Up to
//! 3.22, Valgrind does not know that `io_uring_enter` may block: a worker waiting in it for a
//! completion keeps Valgrind's one-thread-at-a-time lock, so no other thread runs until a
//! completion arrives. Two consequences, both handled: the service must print its start-up
//! line before its workers first wait (ping_common::per_core holds them until it has), and
//! a SIGTERM, taken by the main thread, waits for that lock until the worker's time slice
//! ends (`--fair-sched=yes` makes it a ticket lock, so the worker does not take it again
//! first: thousands of requests after SIGTERM became tens). So when the service is still
//! there a moment after SIGTERM, the runner goes on sending the same request on the same
//! connection until the process is gone, and counts the responses: a run's point is (all
//! the responses it sent, its instructions), exact but for the part of one request the
//! worker may have begun when it was stopped (docs/counted-cost.md).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ping_common::startup::StartupLine;

use crate::count::cachegrind;
use crate::results::schema::InstructionCount;
use crate::service::http;

/// The two request counts of the slope (c1, one connection); the second is raised to keep
/// their difference when the first run answered more than it was sent before it stopped.
pub const REQUESTS: (u64, u64) = (2_000, 6_000);
/// What one count adds to a repetition, for `matrix plan`: two Valgrind start-ups, 8,000
/// requests and two shutdowns. In the committed counted reference (2026-12-04T06-33-17Z) a c1
/// repetition with its count took 8.6 s (median) where a c64 one of the same length took
/// 6.0 s; ping-epoll and ping-may-minihttp add about 1.3 s, the io_uring services (their
/// stop grace) and tokio's about 3 s.
pub const ESTIMATE_MS: u64 = 2_600;
/// How long a service may take to print its start-up line under Valgrind.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long it may take to exit (and Valgrind to write its counts) after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// How long after SIGTERM a service is taken to be stuck behind a worker waiting in
/// `io_uring_enter` (see the module doc), and requests go on until it exits.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// What one measurement needs.
#[derive(Clone)]
pub struct Target<'a> {
    pub binary: &'a Path,
    pub service_args: &'a [String],
    pub path: &'a str,
    /// The cell's extra request headers: the count sends the request the timed load sends.
    pub headers: Vec<(String, String)>,
    /// The protocol the timed load speaks (the service was started for it).
    pub protocol: loadgen::Protocol,
    /// The I/O driver the service reported when it ran normally; a different one under
    /// Valgrind (a fallback) would count another program.
    pub io_driver: Option<&'a str>,
    pub cpus: &'a [u32],
    pub scratch_dir: &'a Path,
    /// Where to keep each run's out file, gzipped (`<stem>-<requests>.out.gz`); None: not kept.
    pub keep: Option<Keep<'a>>,
}

/// Where a count's cachegrind out files are kept.
#[derive(Clone)]
pub struct Keep<'a> {
    pub dir: &'a Path,
    /// The file names' start: the cell's key and repetition.
    pub stem: String,
}

/// Writes `text` gzipped to `<dir>/<stem>-<n>.out.gz`. Keeping is a convenience: a failure is
/// said on stderr, never the count's.
fn keep(k: &Keep, n: u64, text: &str) {
    use std::io::Write as _;
    let path = k.dir.join(format!("{}-{n}.out.gz", k.stem));
    let r = std::fs::create_dir_all(k.dir).and_then(|()| {
        let mut z = flate2::write::GzEncoder::new(
            std::fs::File::create(&path)?,
            flate2::Compression::default(),
        );
        z.write_all(text.as_bytes())?;
        z.finish().map(drop)
    });
    if let Err(e) = r {
        eprintln!(
            "note: cachegrind output not kept at {}: {e}",
            path.display()
        );
    }
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
        "{version} --tool=cachegrind --cache-sim=no --fair-sched=yes (user space only; the \
         load's own request bytes)"
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
    let failed = |e, points| InstructionCount {
        unmeasured: Some(e),
        tool: tool(&version),
        points,
        ..Default::default()
    };
    let first = match run_once(t, REQUESTS.0) {
        Ok(run) => run,
        Err(e) => return failed(e, vec![]),
    };
    // The second run serves at least N2 − N1 more than the first answered in all: an io_uring
    // service answers until its worker's time slice ends after SIGTERM, which took
    // ping-compio's first run from 2,000 to 8,233 responses, past the 6,000 planned for the
    // second (a slope over 17 requests, backwards).
    let n2 = REQUESTS.1.max(first.point.0 + (REQUESTS.1 - REQUESTS.0));
    let second = match run_once(t, n2) {
        Ok(run) => run,
        Err(e) => return failed(e, vec![first.point]),
    };
    let mut c = counted([first.point, second.point], tool(&version));
    if c.per_request.is_some() {
        let requests = second.point.0 - first.point.0;
        (c.functions, c.crates) =
            cachegrind::per_request(&first.functions, &second.functions, requests);
    }
    c
}

/// One run under Valgrind: (responses, instructions) and its instructions per function.
struct Run {
    point: (u64, u64),
    functions: BTreeMap<String, u64>,
}

/// The count of two runs' points: their slope, or unmeasured with the points. A slope needs
/// more instructions at more requests; a count that fell is one that depends on time more
/// than on requests (an executor polling between requests), recorded with its two points,
/// never as a number or a silent blank.
fn counted(points: [(u64, u64); 2], tool: String) -> InstructionCount {
    let per_request = slope(&points);
    let [(n1, i1), (n2, i2)] = points;
    let unmeasured = per_request.is_none().then(|| {
        format!(
            "instructions did not grow with requests ({i1} at {n1} requests, {i2} at {n2}): \
             this service's count depends on timing more than on its requests"
        )
    });
    InstructionCount {
        per_request,
        unmeasured,
        tool,
        points: points.to_vec(),
        ..Default::default()
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

/// Kills the whole group on drop, so a Valgrind that hangs is never left behind.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group our child leads.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// One run under Valgrind serving `n` requests: the responses it sent in all (`n`, and any
/// answered after SIGTERM), its total instruction count and its count per function.
fn run_once(t: &Target, n: u64) -> Result<Run, String> {
    let addr = crate::service::spawn::free_addr([127, 0, 0, 1].into())
        .map_err(|e| format!("no free port: {e}"))?;
    let out: PathBuf = t
        .scratch_dir
        .join(format!("cachegrind-{}-{n}.out", addr.port()));
    let mut cmd = Command::new("valgrind");
    cmd.args(["--tool=cachegrind", "--cache-sim=no", "--fair-sched=yes"])
        .arg(format!("--cachegrind-out-file={}", out.display()))
        .arg(t.binary)
        .args(["--listen", &addr.to_string(), "--workers", "1"])
        .args(t.service_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    if crate::service::spawn::Argv::Contract(t.service_args).tls() {
        cmd.args(crate::service::tls::service_args()?);
    }
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
    let mut conn = Conn::open(addr, t.path, &t.headers, t.protocol)?;
    for i in 0..n {
        conn.get().map_err(|e| format!("request {i}: {e}"))?;
    }
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(group.0.id() as i32, libc::SIGTERM) };
    let mut answered = n;
    let mut poking = true;
    let deadline = Instant::now() + STOP_TIMEOUT;
    let grace = Instant::now() + STOP_GRACE;
    while group.0.try_wait().ok().flatten().is_none() {
        if Instant::now() >= deadline {
            return Err(format!(
                "did not exit within {} s of SIGTERM under Valgrind (answered {} requests \
                 after it)",
                STOP_TIMEOUT.as_secs(),
                answered - n
            ));
        }
        // Still there: its worker waits in `io_uring_enter` holding Valgrind's lock, and the
        // signal waits for that lock. Each request runs the worker on; the one it is stopped
        // in is not answered, and only answered ones are counted. After one that is not, no
        // more are sent (a late answer would be miscounted).
        if poking && Instant::now() >= grace {
            match conn.get() {
                Ok(()) => {
                    answered += 1;
                    continue;
                }
                Err(_) => poking = false,
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(conn);
    let text = std::fs::read_to_string(&out).map_err(|e| format!("no cachegrind output: {e}"));
    let _ = std::fs::remove_file(&out);
    let text = text?;
    if let Some(k) = &t.keep {
        keep(k, n, &text);
    }
    let instructions =
        summary(&text).ok_or_else(|| "cachegrind output without a summary line".to_owned())?;
    Ok(Run {
        point: (answered, instructions),
        functions: cachegrind::by_function(&text),
    })
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
        Ok(_) => Err("exited under Valgrind before its start-up line".into()),
        Err(_) => Err(format!(
            "no start-up line within {} s under Valgrind",
            START_TIMEOUT.as_secs()
        )),
    }
}

/// One kept-alive connection sending GETs of one path, each to be answered 200: loadgen's
/// own request bytes for the cell (no header of the runner's own), so the count is that of
/// the requests the timed load sends — a `User-Agent` more cost ping-epoll 9.6 % more
/// instructions. Over h2c, loadgen's session: one stream at a time.
struct Conn {
    stream: crate::service::http::Stream,
    request: loadgen::http::request::RequestBytes,
    /// h2c: the session, and bytes read past the last response.
    h2: Option<(loadgen::http::h2::Session, Vec<u8>)>,
}

impl Conn {
    fn open(
        addr: SocketAddr,
        path: &str,
        headers: &[(String, String)],
        protocol: loadgen::Protocol,
    ) -> Result<Conn, String> {
        let url = format!("{}://{addr}{path}", protocol.scheme());
        let target =
            loadgen::http::target::resolve(&url).map_err(|e| format!("request target: {e}"))?;
        let request =
            loadgen::http::request::RequestBytes::new(&target, headers, true, 1, protocol)?;
        let h2 = request
            .h2_block
            .is_some()
            .then(|| (loadgen::http::h2::Session::new(), Vec::new()));
        let timeout = Duration::from_secs(10);
        let deadline = Instant::now() + START_TIMEOUT;
        let stream = loop {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= deadline => return Err(format!("connect: {e}")),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        stream
            .set_read_timeout(Some(timeout))
            .map_err(|e| e.to_string())?;
        let _ = stream.set_nodelay(true);
        let stream = crate::service::http::Stream::alpn(stream, protocol.alpn())?;
        Ok(Conn {
            stream,
            request,
            h2,
        })
    }

    /// One request, answered 200.
    fn get(&mut self) -> Result<(), String> {
        let status = match &mut self.h2 {
            Some((s, buf)) => h2_exchange(&mut self.stream, s, buf, &self.request)?,
            None => http::exchange(&mut self.stream, &self.request.batch, Instant::now())?.status,
        };
        if status != 200 {
            return Err(format!("answered {status}"));
        }
        Ok(())
    }
}

/// Writes what the session has to send (requests, acknowledgements), if anything.
fn send(
    stream: &mut impl std::io::Write,
    s: &mut loadgen::http::h2::Session,
) -> Result<(), String> {
    if !s.out.is_empty() {
        stream
            .write_all(&s.out)
            .map_err(|e| format!("write: {e}"))?;
        s.out.clear();
    }
    Ok(())
}

/// One h2c request on `s` (the session's opening goes with the first), `buf` holding what was
/// read past the last response: its response's status.
fn h2_exchange(
    stream: &mut (impl std::io::Read + std::io::Write),
    s: &mut loadgen::http::h2::Session,
    buf: &mut Vec<u8>,
    req: &loadgen::http::request::RequestBytes,
) -> Result<u16, String> {
    use loadgen::http::response::{Sent, Step};
    let block = req.h2_block.as_deref().unwrap_or_default();
    let sent = Sent {
        at_ns: 0,
        counted: true,
    };
    if !s.request(1, block, sent) {
        return Err("the connection's HTTP/2 stream ids are spent".into());
    }
    // The request, and the session's opening with the first.
    send(stream, s)?;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match s.feed(buf) {
            Step::Done { consumed, response } => {
                buf.drain(..consumed);
                send(stream, s)?;
                return Ok(response.status);
            }
            Step::More { consumed } => {
                buf.drain(..consumed);
                // What the framer answered (SETTINGS and PING acknowledged), then more bytes.
                send(stream, s)?;
                let n = stream.read(&mut chunk).map_err(|e| format!("read: {e}"))?;
                if n == 0 {
                    return Err("the server closed the connection".into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Step::Error(e) => return Err(e.to_string()),
        }
    }
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

    #[test]
    fn a_count_that_fell_is_unmeasured_with_its_points() {
        let c = counted([(2000, 90_000_000), (6000, 80_000_000)], "t".into());
        assert_eq!(c.per_request, None);
        let why = c.unmeasured.unwrap();
        assert!(
            why.contains("did not grow") && why.contains("90000000 at 2000"),
            "{why}"
        );
        let c = counted([(2000, 4_000), (6000, 12_000)], "t".into());
        assert_eq!((c.per_request, c.unmeasured), (Some(2.0), None));
    }

    /// A built binary of `name` in the workspace's target dir, release first.
    fn built(name: &str) -> Option<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        ["release", "debug"]
            .iter()
            .map(|p| root.join("target").join(p).join(name))
            .find(|p| p.exists())
    }

    /// Whether `io_uring_setup` works here (a one-entry ring, closed at once).
    fn io_uring_here() -> Result<(), String> {
        // struct io_uring_params: 120 bytes, zeroed.
        let mut params = [0u64; 15];
        // SAFETY: io_uring_setup(2) reads and writes only the 120-byte params it is given.
        let fd = unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, params.as_mut_ptr()) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        // SAFETY: closing the ring fd just opened.
        unsafe { libc::close(fd as i32) };
        Ok(())
    }

    /// The io_uring services counted on io_uring (each built by `cargo build -p <name>`):
    /// their start-up line comes out under Valgrind, they serve, and they stop, with any
    /// requests answered after SIGTERM in their point.
    #[test]
    fn counts_io_uring_services_under_valgrind() {
        if let Err(e) = version() {
            eprintln!("SKIPPED: counts_io_uring_services_under_valgrind: {e}");
            return;
        }
        if let Err(e) = io_uring_here() {
            eprintln!("SKIPPED: counts_io_uring_services_under_valgrind: io_uring_setup: {e}");
            return;
        }
        let scratch = std::env::temp_dir();
        let names = ["ping-monoio", "ping-compio", "ping-glommio"];
        // Side by side: each is Valgrind's one thread at a time, and the runs are independent.
        let counts: Vec<Option<InstructionCount>> = std::thread::scope(|s| {
            let runs: Vec<_> = names
                .iter()
                .map(|name| {
                    let scratch = &scratch;
                    s.spawn(move || {
                        built(name).map(|bin| {
                            measure(&Target {
                                binary: &bin,
                                service_args: &[],
                                path: "/ping",
                                headers: vec![],
                                protocol: loadgen::Protocol::Http11,
                                io_driver: Some("io_uring"),
                                cpus: &[],
                                scratch_dir: scratch,
                                keep: None,
                            })
                        })
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (name, c) in names.into_iter().zip(counts) {
            let Some(c) = c else {
                eprintln!("SKIPPED: {name} under Valgrind: not built (cargo build -p {name})");
                continue;
            };
            // Both runs started under Valgrind, served and stopped, whatever the slope.
            let [(n1, _), (n2, _)] = c.points[..] else {
                panic!("{name}: {c:?}")
            };
            assert!(n1 >= REQUESTS.0 && n2 >= REQUESTS.1, "{name}: {c:?}");
            // glommio's count depends on timing (docs/counted-cost.md): on a busy machine its
            // slope may not be taken, and then it must say so; the others' must be.
            if name == "ping-glommio"
                && let Some(why) = &c.unmeasured
            {
                assert!(why.contains("did not grow"), "{name}: {c:?}");
                assert!(c.per_request.is_none(), "{name}: {c:?}");
                eprintln!("{name}: {why}");
                continue;
            }
            assert!(c.unmeasured.is_none(), "{name}: {c:?}");
            let per = c.per_request.expect(name);
            assert!((500.0..200_000.0).contains(&per), "{name}: {c:?}");
            eprintln!(
                "{name}: {per:.1} instructions/request, points {:?}",
                c.points
            );
        }
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
        let kept = scratch.join(format!("pingmatrix-cachegrind-{}", std::process::id()));
        let c = measure(&Target {
            binary: &bin,
            service_args: &[],
            path: "/ping",
            headers: vec![],
            protocol: loadgen::Protocol::Http11,
            io_driver: Some("epoll"),
            cpus: &[],
            scratch_dir: &scratch,
            keep: Some(Keep {
                dir: &kept,
                stem: "cell-rep1".into(),
            }),
        });
        // Both runs' out files kept, gzipped, whole.
        for (n, _) in &c.points {
            let f = std::fs::File::open(kept.join(format!("cell-rep1-{n}.out.gz"))).unwrap();
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(f), &mut text).unwrap();
            assert!(summary(&text).is_some(), "{n}");
        }
        let _ = std::fs::remove_dir_all(&kept);
        assert!(c.unmeasured.is_none(), "{c:?}");
        let per = c.per_request.unwrap();
        assert!((500.0..200_000.0).contains(&per), "{c:?}");
        assert!(c.tool.starts_with("valgrind-"), "{c:?}");
        // Where they go: the crates add up to the total, and the service's own parser is
        // among the functions.
        let crates: f64 = c.crates.iter().map(|c| c.per_request).sum();
        assert!(
            (crates - per).abs() < 1e-6 * per,
            "{crates} vs {per}: {:?}",
            c.crates
        );
        assert!(
            c.functions.iter().any(|f| f.krate == "httparse"),
            "{:?}",
            c.functions
        );
        // A different driver under Valgrind than outside it is refused, not counted.
        let c = measure(&Target {
            binary: &bin,
            service_args: &[],
            path: "/ping",
            headers: vec![],
            protocol: loadgen::Protocol::Http11,
            io_driver: Some("io_uring"),
            cpus: &[],
            scratch_dir: &scratch,
            keep: None,
        });
        assert!(c.per_request.is_none(), "{c:?}");
        assert!(c.unmeasured.unwrap().contains("instead of io_uring"));
    }
}
