//! The runner's start-up floor: the least a service can do — bind, answer one `GET /ping`
//! with 200, exit. `matrix run` starts it a few times before the matrix, through the very
//! path that times the services (confinement, exec clock, readiness probe), and records how
//! long that takes: what no runtime can beat on this machine.
//!
//! Only `--listen ADDR` is read; other service arguments (`--workers N`) are accepted and
//! ignored. Standard library only, so its own start-up is as small as it gets.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut listen = String::from("127.0.0.1:8080");
    while let Some(a) = args.next() {
        if a == "--listen" {
            match args.next() {
                Some(v) => listen = v,
                None => return usage("--listen needs an address"),
            }
        }
    }
    let listener = match TcpListener::bind(&listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("pingmatrix-responder: cannot listen on {listen}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Answer until one request got its 200 (a probe that connects too early may close).
    for stream in listener.incoming() {
        let Ok(mut s) = stream else { continue };
        let mut buf = [0u8; 1024];
        let mut n = 0;
        while n < buf.len() && !buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf[n..]) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        if buf[..n].starts_with(b"GET /ping ")
            && s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\npong")
                .is_ok()
        {
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::FAILURE
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("pingmatrix-responder: {msg}");
    ExitCode::from(2)
}
