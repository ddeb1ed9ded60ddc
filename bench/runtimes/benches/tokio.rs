//! tokio on a current-thread runtime (timers and I/O enabled).

use std::hint::black_box;
use std::time::{Duration, Instant};

use runtime_bench::{ECHO_BYTES, Runtime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

struct Tokio {
    rt: tokio::runtime::Runtime,
    /// Client end of the echo connection; its server task lives on `rt`.
    echo: TcpStream,
}

impl Tokio {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let echo = rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("local addr");
            tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.expect("accept");
                s.set_nodelay(true).expect("nodelay");
                let mut buf = [0u8; ECHO_BYTES];
                while s.read_exact(&mut buf).await.is_ok() {
                    if s.write_all(&buf).await.is_err() {
                        break;
                    }
                }
            });
            let c = TcpStream::connect(addr).await.expect("connect");
            c.set_nodelay(true).expect("nodelay");
            c
        });
        Tokio { rt, echo }
    }
}

impl Runtime for Tokio {
    fn name(&self) -> String {
        "tokio".into()
    }

    fn spawn_join(&mut self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for i in 0..iters {
                black_box(tokio::spawn(async move { black_box(i) }).await.unwrap());
            }
            start.elapsed()
        })
    }

    fn channel_round_trip(&mut self, iters: u64) -> Duration {
        self.rt.block_on(async {
            let (to_b, mut b_rx) = mpsc::unbounded_channel::<u64>();
            let (to_a, mut a_rx) = mpsc::unbounded_channel::<u64>();
            let b = tokio::spawn(async move {
                while let Some(v) = b_rx.recv().await {
                    to_a.send(v).unwrap();
                }
            });
            let a = tokio::spawn(async move {
                let start = Instant::now();
                for i in 0..iters {
                    to_b.send(i).unwrap();
                    black_box(a_rx.recv().await.unwrap());
                }
                start.elapsed()
            });
            let elapsed = a.await.unwrap();
            b.await.unwrap();
            elapsed
        })
    }

    fn sleep(&mut self, period: Duration, iters: u64) -> Duration {
        self.rt.block_on(async {
            let start = Instant::now();
            for _ in 0..iters {
                tokio::time::sleep(period).await;
            }
            start.elapsed()
        })
    }

    fn tcp_echo(&mut self, iters: u64) -> Duration {
        let echo = &mut self.echo;
        self.rt.block_on(async {
            let mut buf = [7u8; ECHO_BYTES];
            let start = Instant::now();
            for _ in 0..iters {
                echo.write_all(&buf).await.unwrap();
                echo.read_exact(&mut buf).await.unwrap();
            }
            start.elapsed()
        })
    }
}

fn main() {
    let mut c = runtime_bench::criterion().configure_from_args();
    runtime_bench::bench(&mut c, &mut Tokio::new());
    c.final_summary();
}
