//! monoio, one runtime per I/O driver: `monoio-uring` (io_uring) and `monoio-legacy` (epoll).
//! Both with the timer enabled; channels from local-sync (monoio has none of its own).
//! A driver the kernel refuses (io_uring disabled, seccomp) is skipped with a message.

use std::hint::black_box;
use std::time::{Duration, Instant};

use monoio::io::{AsyncReadRentExt, AsyncWriteRentExt};
use monoio::net::{TcpListener, TcpStream};
use monoio::{Driver, IoUringDriver, LegacyDriver, RuntimeBuilder};
use runtime_bench::{ECHO_BYTES, Runtime};

/// `D` is the runtime's full driver type: an I/O driver wrapped in monoio's `TimeDriver`.
struct Monoio<D: Driver + 'static> {
    name: &'static str,
    rt: monoio::Runtime<D>,
    /// Client end of the echo connection; its server task lives on `rt`.
    echo: Option<TcpStream>,
    /// The echo buffer, owned by whichever I/O call is in flight (rent-style I/O).
    buf: Option<Vec<u8>>,
}

impl<D: Driver + 'static> Monoio<D> {
    fn new(name: &'static str, rt: std::io::Result<monoio::Runtime<D>>) -> std::io::Result<Self> {
        let mut rt = rt?;
        let echo = rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("local addr");
            monoio::spawn(async move {
                let (mut s, _) = listener.accept().await.expect("accept");
                s.set_nodelay(true).expect("nodelay");
                let mut buf = vec![0u8; ECHO_BYTES];
                loop {
                    let (r, b) = s.read_exact(buf).await;
                    if r.is_err() {
                        break;
                    }
                    let (r, b) = s.write_all(b).await;
                    if r.is_err() {
                        break;
                    }
                    buf = b;
                }
            });
            let c = TcpStream::connect(addr).await.expect("connect");
            c.set_nodelay(true).expect("nodelay");
            c
        });
        Ok(Monoio {
            name,
            rt,
            echo: Some(echo),
            buf: Some(vec![7u8; ECHO_BYTES]),
        })
    }
}

impl<D: Driver + 'static> Runtime for Monoio<D> {
    fn name(&self) -> String {
        self.name.into()
    }

    fn spawn_join(&mut self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for i in 0..iters {
                black_box(monoio::spawn(async move { black_box(i) }).await);
            }
            start.elapsed()
        })
    }

    fn channel_round_trip(&mut self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let (to_b, mut b_rx) = local_sync::mpsc::unbounded::channel::<u64>();
            let (to_a, mut a_rx) = local_sync::mpsc::unbounded::channel::<u64>();
            let b = monoio::spawn(async move {
                while let Some(v) = b_rx.recv().await {
                    to_a.send(v).unwrap();
                }
            });
            let a = monoio::spawn(async move {
                let start = Instant::now();
                for i in 0..iters {
                    to_b.send(i).unwrap();
                    black_box(a_rx.recv().await.unwrap());
                }
                start.elapsed()
            });
            let elapsed = a.await;
            b.await;
            elapsed
        })
    }

    fn sleep(&mut self, period: Duration, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                monoio::time::sleep(period).await;
            }
            start.elapsed()
        })
    }

    fn tcp_echo(&mut self, iters: u64) -> Duration {
        let mut echo = self.echo.take().expect("echo connection");
        let mut buf = self.buf.take().expect("echo buffer");
        let (echo, buf, elapsed) = self.rt.block_on(async move {
            let start = Instant::now();
            for _ in 0..iters {
                let (r, b) = echo.write_all(buf).await;
                r.unwrap();
                let (r, b) = echo.read_exact(b).await;
                r.unwrap();
                buf = b;
            }
            (echo, buf, start.elapsed())
        });
        self.echo = Some(echo);
        self.buf = Some(buf);
        elapsed
    }
}

fn main() {
    let mut c = runtime_bench::criterion().configure_from_args();
    let uring = RuntimeBuilder::<IoUringDriver>::new()
        .enable_timer()
        .build();
    match Monoio::new("monoio-uring", uring) {
        Ok(mut rt) => runtime_bench::bench(&mut c, &mut rt),
        Err(e) => eprintln!("SKIPPED monoio-uring: io_uring runtime not available: {e}"),
    }
    let legacy = RuntimeBuilder::<LegacyDriver>::new().enable_timer().build();
    match Monoio::new("monoio-legacy", legacy) {
        Ok(mut rt) => runtime_bench::bench(&mut c, &mut rt),
        Err(e) => eprintln!("SKIPPED monoio-legacy: {e}"),
    }
    c.final_summary();
}
