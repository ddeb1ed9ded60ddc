//! Loopback TCP echo round trip: one echo thread of this process on 127.0.0.1, one blocking
//! `TCP_NODELAY` client on the calling thread, fixed-size messages one at a time.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use super::{EchoFloor, FloorPercentiles, ns_hist};
use crate::sys::clock::now_ns;

const PAYLOAD_BYTES: usize = 64;
const METHOD: &str = "blocking TCP_NODELAY client on the calling thread, echo thread of the \
                      same process on 127.0.0.1, one 64-byte message at a time";

pub fn measure(duration_ms: u64) -> EchoFloor {
    let (round_trip, unsupported) = match round_trips(duration_ms) {
        Ok(h) => (FloorPercentiles::from_ns(&h), None),
        Err(e) => (None, Some(format!("loopback echo: {e}"))),
    };
    EchoFloor {
        method: METHOD.into(),
        payload_bytes: PAYLOAD_BYTES as u32,
        round_trip,
        unsupported,
    }
}

fn round_trips(duration_ms: u64) -> std::io::Result<hdrhistogram::Histogram<u64>> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let echo = std::thread::Builder::new()
        .name("loadgen-echo".into())
        .spawn(move || -> std::io::Result<()> {
            let (mut s, _) = listener.accept()?;
            s.set_nodelay(true)?;
            let mut buf = [0u8; PAYLOAD_BYTES];
            loop {
                // EOF (client done) ends the thread.
                let n = s.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                s.write_all(&buf[..n])?;
            }
        })?;
    let mut h = ns_hist();
    let result = (|| {
        let mut c = TcpStream::connect(addr)?;
        c.set_nodelay(true)?;
        let msg = [b'x'; PAYLOAD_BYTES];
        let mut back = [0u8; PAYLOAD_BYTES];
        let end = now_ns() + duration_ms * 1_000_000;
        loop {
            let t = now_ns();
            if t >= end {
                return Ok(());
            }
            c.write_all(&msg)?;
            c.read_exact(&mut back)?;
            h.saturating_record((now_ns() - t).max(1));
        }
    })();
    // On success our stream is dropped by now (EOF for the echo thread), so it ends; after
    // a failure it may still wait in accept, so it is left to die with the process.
    if result.is_ok() {
        let _ = echo.join();
    }
    result.map(|()| h)
}
