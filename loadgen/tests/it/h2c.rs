//! h2c against an HTTP/2 server loadgen did not write (the `h2` crate, hyper's own): exact
//! accounting over concurrent streams in the closed and open loop, bodies larger than the read
//! buffer, and a server that refuses streams counted as errors, never a hang.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use loadgen::{LoadSpec, Protocol};

use crate::support::{assert_adds_up, closed, open};

/// A server answering every request with `body`, allowing `max_streams` concurrent streams
/// per connection; it runs until the test process ends.
fn h2_server(body: &'static [u8], max_streams: u32) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            loop {
                let Ok((sock, _)) = l.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::Builder::new()
                        .max_concurrent_streams(max_streams)
                        .handshake::<_, Bytes>(sock)
                        .await
                    else {
                        return;
                    };
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        let rsp = http::Response::builder().status(200).body(()).unwrap();
                        if let Ok(mut send) = respond.send_response(rsp, body.is_empty())
                            && !body.is_empty()
                        {
                            let _ = send.send_data(Bytes::from_static(body), true);
                        }
                    }
                });
            }
        });
    });
    rx.recv_timeout(Duration::from_secs(10)).unwrap()
}

fn h2c(mut s: LoadSpec) -> LoadSpec {
    s.protocol = Protocol::H2c;
    s
}

#[test]
fn concurrent_streams_are_counted_exactly() {
    let addr = h2_server(b"pong", 100);
    let spec = LoadSpec {
        requests: Some(4_000),
        expect_body_bytes: Some(4),
        ..h2c(closed(format!("http://{addr}/ping"), 4, 10))
    };
    let r = loadgen::run(&spec).unwrap();
    let c = &r.counts;
    assert_adds_up(&r);
    assert_eq!(
        (c.sent, c.ok, c.errors.total(), c.timeouts),
        (4_000, 4_000, 0, 0),
        "{c:?}"
    );
    assert_eq!(r.connections.established, 4);
    assert!(
        r.generator
            .io
            .as_ref()
            .is_some_and(|io| io.reason.contains("h2c"))
    );
}

#[test]
fn the_open_loop_sends_each_request_on_a_stream_of_its_own() {
    let addr = h2_server(b"pong", 100);
    let spec = LoadSpec {
        duration_ms: Some(400),
        expect_body_bytes: Some(4),
        ..h2c(open(format!("http://{addr}/ping"), 1_000.0, 4))
    };
    let r = loadgen::run(&spec).unwrap();
    let c = &r.counts;
    assert_adds_up(&r);
    assert!(
        c.ok >= 390 && c.errors.total() == 0 && c.timeouts == 0,
        "{c:?}"
    );
}

#[test]
fn a_body_larger_than_the_read_buffer_is_counted_whole() {
    static BIG: [u8; 40_000] = [b'x'; 40_000];
    let addr = h2_server(&BIG, 100);
    let spec = LoadSpec {
        requests: Some(200),
        expect_body_bytes: Some(40_000),
        ..h2c(closed(format!("http://{addr}/big"), 2, 4))
    };
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert_eq!(
        (r.counts.ok, r.counts.errors.total()),
        (200, 0),
        "{:?}",
        r.counts
    );
}

#[test]
fn streams_past_the_server_s_limit_are_errors_not_a_hang() {
    // The server allows 2 concurrent streams; 8 at once are refused (RST_STREAM).
    let addr = h2_server(b"pong", 2);
    let spec = LoadSpec {
        duration_ms: Some(300),
        ..h2c(closed(format!("http://{addr}/ping"), 1, 8))
    };
    let t = std::time::Instant::now();
    let r = loadgen::run(&spec).unwrap();
    assert_adds_up(&r);
    assert!(r.counts.errors.total() > 0, "{:?}", r.counts);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn bad_h2c_specs_are_refused_before_any_connection() {
    let base = h2c(closed("http://127.0.0.1:9/ping".into(), 1, 1));
    for (spec, says) in [
        (
            LoadSpec {
                keepalive: false,
                ..base.clone()
            },
            "keep",
        ),
        (
            LoadSpec {
                io: loadgen::IoChoice::Uring,
                ..base.clone()
            },
            "epoll",
        ),
        (
            LoadSpec {
                headers: vec![("Connection".into(), "close".into())],
                ..base.clone()
            },
            "HTTP/2",
        ),
    ] {
        let e = spec.validate().unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
}
