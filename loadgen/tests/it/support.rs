//! The suite's one support kit: small in-test HTTP/1.1 servers on 127.0.0.1 (std threads),
//! with knobs for the failure modes loadgen must account for (dropping a `TestServer` stops
//! it and all its threads), test-friendly specs, and the loadgen binary.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loadgen::{IoChoice, LoadModel, LoadSpec, Report};

#[derive(Clone, Copy, Debug)]
pub enum Mode {
    /// Answer every request with 200 and a 4-byte body.
    Ok,
    /// Read requests, never answer.
    Silent,
    /// Answer, and close the connection after every response (Connection: close).
    CloseEach,
    /// Answer with this status.
    Status(u16),
    /// Answer 200 with a chunked body of 7 bytes.
    Chunked,
    /// Answer 200 with a body of this many bytes (larger than loadgen's read buffer).
    Big(usize),
    /// The whole server freezes once for `ms` when request number `after` arrives.
    StallOnce { after: u64, ms: u64 },
    /// Hostile: answers every request twice (one write), so half the responses are unrequested.
    Twice,
    /// Answers 200 without Content-Length or chunking and closes: the body ends at EOF
    /// (legal HTTP/1.1).
    UntilClose,
}

struct Shared {
    mode: Mode,
    stop: AtomicBool,
    requests: AtomicU64,
    accepted: AtomicU64,
    stall_done: AtomicBool,
    /// Held while stalling, so every connection freezes, not just one.
    gate: Mutex<()>,
    streams: Mutex<Vec<TcpStream>>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(mode: Mode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            mode,
            stop: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            stall_done: AtomicBool::new(false),
            gate: Mutex::new(()),
            streams: Mutex::new(Vec::new()),
        });
        let s = shared.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                s.accepted.fetch_add(1, Ordering::SeqCst);
                if let Ok(c) = stream.try_clone() {
                    s.streams.lock().unwrap().push(c);
                }
                let s2 = s.clone();
                std::thread::spawn(move || serve(stream, &s2));
            }
        });
        Self {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/ping", self.addr)
    }

    /// Requests the server has seen.
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Stop listening and reset every open connection, like a killed process.
    pub fn kill(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for s in self.shared.streams.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn serve(mut stream: TcpStream, s: &Shared) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0;
    let mut out = Vec::new();
    while !s.stop.load(Ordering::SeqCst) {
        let n = match stream.read(&mut buf[have..]) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(_) => return,
        };
        have += n;
        out.clear();
        let mut close = false;
        while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
            let req_len = end + 4;
            let k = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
            buf.copy_within(req_len..have, 0);
            have -= req_len;
            match s.mode {
                Mode::Silent => continue,
                Mode::StallOnce { after, ms }
                    if k == after && !s.stall_done.swap(true, Ordering::SeqCst) =>
                {
                    let _g = s.gate.lock().unwrap();
                    std::thread::sleep(Duration::from_millis(ms));
                }
                Mode::StallOnce { .. } => drop(s.gate.lock().unwrap()),
                _ => {}
            }
            match s.mode {
                Mode::Status(code) => out.extend_from_slice(
                    format!("HTTP/1.1 {code} X\r\nContent-Length: 4\r\n\r\nnope").as_bytes(),
                ),
                Mode::Chunked => out.extend_from_slice(
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npong\r\n3\r\nabc\r\n0\r\n\r\n",
                ),
                Mode::Big(n) => {
                    out.extend_from_slice(format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").as_bytes());
                    out.resize(out.len() + n, b'x');
                }
                Mode::Twice => out.extend_from_slice(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npongHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong",
                ),
                Mode::UntilClose => {
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\n\r\npong");
                    close = true;
                    break;
                }
                Mode::CloseEach => {
                    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\npong");
                    close = true;
                    break;
                }
                _ => out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\npong"),
            }
        }
        if !out.is_empty() && stream.write_all(&out).is_err() {
            return;
        }
        if close {
            // The accept thread holds a clone of this socket: shut it down, or dropping
            // ours would not send the FIN.
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// A closed-loop spec with test-friendly defaults on I/O backend `io`.
pub fn closed_on(io: IoChoice, url: String, connections: u32, pipeline: u32) -> LoadSpec {
    LoadSpec {
        io,
        ..closed(url, connections, pipeline)
    }
}

/// A closed-loop spec with test-friendly defaults.
pub fn closed(url: String, connections: u32, pipeline: u32) -> LoadSpec {
    LoadSpec {
        url,
        model: LoadModel::Closed {
            connections,
            pipeline,
        },
        threads: 1,
        keepalive: true,
        duration_ms: None,
        requests: None,
        warmup_ms: 0,
        timeout_ms: 2000,
        expect_status: 200,
        expect_body_bytes: None,
        headers: Vec::new(),
        io: IoChoice::Auto,
        protocol: Default::default(),
    }
}

/// An open-loop spec with the same test-friendly defaults.
pub fn open(url: String, rate_per_s: f64, connections: u32) -> LoadSpec {
    LoadSpec {
        model: LoadModel::Open {
            rate_per_s,
            connections,
            coalesce_us: loadgen::DEFAULT_COALESCE_US,
        },
        ..closed(url, connections, 1)
    }
}

/// Runs `spec` while another thread kills `srv` after `kill_after_ms`; returns the report
/// and how long the run (and the kill) took.
pub fn run_killing_server(
    mut srv: TestServer,
    spec: &LoadSpec,
    kill_after_ms: u64,
) -> (Report, Duration) {
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(kill_after_ms));
        srv.kill();
        srv
    });
    let t = Instant::now();
    let r = loadgen::run(spec).unwrap();
    let _srv = killer.join().unwrap();
    (r, t.elapsed())
}

/// The accounting identity every report must satisfy.
pub fn assert_adds_up(r: &loadgen::Report) {
    let c = &r.counts;
    assert_eq!(
        c.sent,
        c.ok + c.non_2xx + c.errors.total() + c.timeouts + c.in_flight_at_end,
        "accounting does not add up: {c:?}"
    );
}

/// Run the loadgen binary with `args` and collect its output.
pub fn loadgen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(args)
        .output()
        .expect("run the loadgen binary")
}

/// Runs each named test `fn name(io: IoChoice)` once per closed-loop I/O path, as the tests
/// `name::epoll`, `name::uring` and `name::uring_oneshot` (io_uring's receive as kernels
/// before 6.10 run it): the same suite must pass on every one.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn epoll() {
                    super::$name(loadgen::IoChoice::Epoll)
                }
                #[test]
                fn uring() {
                    super::$name(loadgen::IoChoice::Uring)
                }
                #[test]
                fn uring_oneshot() {
                    super::$name(loadgen::IoChoice::UringOneshot)
                }
            }
        )*
    };
}
pub(crate) use on_every_backend;

/// Make `cmd`'s child unable to set up io_uring, as a seccomp policy (Docker's default, for
/// one) or `kernel.io_uring_disabled` would: `io_uring_setup` fails with EPERM.
pub fn without_io_uring(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    let stmt = |code: u16, k: u32| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    // ld [nr]; jeq io_uring_setup ? next : skip one; ret ERRNO(EPERM); ret ALLOW
    let filter = [
        stmt((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 0),
        libc::sock_filter {
            jf: 1,
            ..stmt(
                (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
                libc::SYS_io_uring_setup as u32,
            )
        },
        stmt(
            (libc::BPF_RET | libc::BPF_K) as u16,
            SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        stmt((libc::BPF_RET | libc::BPF_K) as u16, SECCOMP_RET_ALLOW),
    ];
    // SAFETY: runs in the forked child before exec; only async-signal-safe prctl calls on
    // memory (`filter`) that the fork copied.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr() as *mut libc::sock_filter,
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}
