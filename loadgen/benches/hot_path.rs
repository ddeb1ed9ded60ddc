//! Hot-path micro-benchmarks: framing one ping response, a 16-deep pipelined read, a chunked
//! response, and recording one completion into the per-thread recorder.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use loadgen::http::response::{ResponseParser, Step};
use loadgen::recorder::Recorder;

const PING: &[u8] = b"HTTP/1.1 200 Ok\r\nServer: M\r\nDate: Mon, 30 Nov 2026 12:00:00 GMT\r\nContent-Length: 4\r\nContent-Type: text/plain\r\n\r\npong";

fn parse_all(p: &mut ResponseParser, mut buf: &[u8]) -> u32 {
    let mut n = 0;
    loop {
        match p.feed(buf) {
            Step::Done { consumed, .. } => {
                n += 1;
                buf = &buf[consumed..];
            }
            Step::More { .. } => return n,
            Step::Error(e) => panic!("{e}"),
        }
    }
}

fn parsing(c: &mut Criterion) {
    let mut p = ResponseParser::new();
    c.bench_function("parse ping response", |b| {
        b.iter(|| parse_all(&mut p, black_box(PING)))
    });
    let batch = PING.repeat(16);
    c.bench_function("parse 16 pipelined responses", |b| {
        b.iter(|| parse_all(&mut p, black_box(&batch)))
    });
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\npong\r\n0\r\n\r\n";
    c.bench_function("parse chunked response", |b| {
        b.iter(|| parse_all(&mut p, black_box(chunked)))
    });
}

fn recording(c: &mut Criterion) {
    let mut closed = Recorder::new(0, false, 200, Some(4));
    let mut open = Recorder::new(0, true, 200, Some(4));
    let resp = loadgen::http::response::Response {
        status: 200,
        body_bytes: 4,
        close: false,
        stream: None,
    };
    let mut t = 1_000_000u64;
    c.bench_function("record completion (closed loop)", |b| {
        b.iter(|| {
            t += 997;
            closed.response(black_box(&resp), t, t - 45_000, t - 45_000);
        })
    });
    c.bench_function("record completion (open loop)", |b| {
        b.iter(|| {
            t += 997;
            open.response(black_box(&resp), t, t - 45_000, t - 52_000);
            open.send_lag(black_box(7_000), black_box(3_000), false);
        })
    });
}

criterion_group!(benches, parsing, recording);
criterion_main!(benches);
