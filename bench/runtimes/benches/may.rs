//! may (stackful coroutines) with one worker thread, not pinned to a core. Every measured loop
//! runs inside a coroutine; "tasks" are coroutines, the channel is `may::sync::mpsc`.

use std::hint::black_box;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use may::go;
use may::net::{TcpListener, TcpStream};
use runtime_bench::{ECHO_BYTES, Runtime};

struct May {
    /// Client end of the echo connection (moved into the measuring coroutine and back).
    echo: Option<TcpStream>,
}

impl May {
    fn new() -> Self {
        // Before the first coroutine: one worker (like the other runtimes here), unpinned.
        may::config().set_workers(1).set_worker_pin(false);
        let echo = go!(|| {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("local addr");
            go!(move || {
                let (mut s, _) = listener.accept().expect("accept");
                s.set_nodelay(true).expect("nodelay");
                let mut buf = [0u8; ECHO_BYTES];
                while s.read_exact(&mut buf).is_ok() {
                    if s.write_all(&buf).is_err() {
                        break;
                    }
                }
            });
            let c = TcpStream::connect(addr).expect("connect");
            c.set_nodelay(true).expect("nodelay");
            c
        })
        .join()
        .expect("echo set-up coroutine");
        May { echo: Some(echo) }
    }
}

/// Runs `f` in a coroutine and returns its result (the measured time).
fn in_coroutine<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    go!(f).join().expect("measuring coroutine panicked")
}

impl Runtime for May {
    fn name(&self) -> String {
        "may".into()
    }

    fn spawn_join(&mut self, iters: u64) -> Duration {
        in_coroutine(move || {
            let start = Instant::now();
            for i in 0..iters {
                black_box(go!(move || black_box(i)).join().unwrap());
            }
            start.elapsed()
        })
    }

    fn channel_round_trip(&mut self, iters: u64) -> Duration {
        in_coroutine(move || {
            let (to_b, b_rx) = may::sync::mpsc::channel::<u64>();
            let (to_a, a_rx) = may::sync::mpsc::channel::<u64>();
            let b = go!(move || {
                while let Ok(v) = b_rx.recv() {
                    to_a.send(v).unwrap();
                }
            });
            let a = go!(move || {
                let start = Instant::now();
                for i in 0..iters {
                    to_b.send(i).unwrap();
                    black_box(a_rx.recv().unwrap());
                }
                start.elapsed()
            });
            let elapsed = a.join().unwrap();
            b.join().unwrap();
            elapsed
        })
    }

    fn sleep(&mut self, period: Duration, iters: u64) -> Duration {
        in_coroutine(move || {
            let start = Instant::now();
            for _ in 0..iters {
                may::coroutine::sleep(period);
            }
            start.elapsed()
        })
    }

    fn tcp_echo(&mut self, iters: u64) -> Duration {
        let mut echo = self.echo.take().expect("echo connection");
        let (echo, elapsed) = in_coroutine(move || {
            let mut buf = [7u8; ECHO_BYTES];
            let start = Instant::now();
            for _ in 0..iters {
                echo.write_all(&buf).unwrap();
                echo.read_exact(&mut buf).unwrap();
            }
            (echo, start.elapsed())
        });
        self.echo = Some(echo);
        elapsed
    }
}

fn main() {
    let mut c = runtime_bench::criterion().configure_from_args();
    runtime_bench::bench(&mut c, &mut May::new());
    c.final_summary();
}
