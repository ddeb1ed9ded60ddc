//! One worker: an OS thread with its own monoio runtime and SO_REUSEPORT listener.

use std::net::SocketAddr;
use std::time::Duration;

use monoio::net::TcpListener;
use monoio::{FusionDriver, FusionRuntime, RuntimeBuilder};
use monoio_rustls::TlsAcceptor;
use ping_common::listen::Share;

/// I/O driver a worker's runtime actually runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    IoUring,
    Epoll,
}

/// Submission-queue entries per ring (monoio's default; ample for 1,000+ connections).
const RING_ENTRIES: u32 = 1024;

/// Runs a worker forever; reports its driver (or a start-up error) on `ready` once bound.
/// With `tls`, each connection is served after its TLS handshake (a failed one drops it).
pub fn run(
    listen: SocketAddr,
    tls: Option<TlsAcceptor>,
    cpu: Option<usize>,
    ready: ping_common::per_core::Ready<Driver>,
) {
    if let Some(cpu) = cpu
        && let Err(e) = monoio::utils::bind_to_cpu_set([cpu])
    {
        ready.failed(format!("cannot pin to cpu {cpu}: {e:?}"));
        return;
    }
    let rt = RuntimeBuilder::<FusionDriver>::new()
        .with_entries(RING_ENTRIES)
        .enable_timer()
        .build();
    let mut rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            ready.failed(format!("cannot build the monoio runtime: {e}"));
            return;
        }
    };
    let driver = match &rt {
        FusionRuntime::Uring(_) => Driver::IoUring,
        FusionRuntime::Legacy(_) => Driver::Epoll,
    };
    rt.block_on(async move {
        // The contract's listening socket (ping-common, SO_REUSEPORT), non-blocking as
        // monoio's own `bind` makes it, taken by monoio.
        let listener = ping_common::listen::bind_listener(listen, Share::PerCore).and_then(|l| {
            l.set_nonblocking(true)?;
            TcpListener::from_std(l)
        });
        let listener = match listener {
            Ok(l) => l,
            Err(e) => {
                ready.failed(format!("cannot listen on {listen}: {e}"));
                return;
            }
        };
        // Waits until the start-up line is out (ping_common::per_core).
        ready.serving(driver);
        loop {
            match listener.accept().await {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    match &tls {
                        Some(tls) => {
                            let tls = tls.clone();
                            monoio::spawn(async move {
                                if let Ok(stream) = tls.accept(stream).await {
                                    crate::conn::serve(stream).await;
                                }
                            });
                        }
                        None => {
                            monoio::spawn(crate::conn::serve(stream));
                        }
                    }
                }
                // Out of fds or a connection reset while queued: back off instead of spinning.
                Err(_) => monoio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    });
}
