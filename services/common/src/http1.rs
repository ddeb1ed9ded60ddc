//! HTTP/1.1 over a byte buffer: parse every complete request with httparse, append the
//! canonical response for each, stop at a `/sleep` (the worker arms a timer and resumes).
//!
//! Same decisions as ping-monoio's loop: heads over 64 KiB → 431 and close, more than 64 headers
//! → 431 and close, unparsable → 400 and close; `Content-Length` bodies are skipped, chunked
//! request bodies are refused with 400. Runtime-free: ping-epoll, ping-glommio and ping-compio
//! all handle requests with it, each naming itself (the `Server` value) in [`Session::new`].

use crate::MAX_HEAD_BYTES;
use crate::request::{Parsed, parse};
use crate::response::{Reply, Status};
use crate::route::Route;

/// Per-connection HTTP state (the bytes themselves live in the connection).
#[derive(Debug)]
pub struct Session {
    /// The service's name, its `Server` value.
    service: &'static str,
    /// Body bytes of the last request still to be discarded.
    skip: u64,
    /// Close once the output is written.
    pub close_after: bool,
    /// A `/sleep` is waiting: `(said_close, keep_alive)` of that request.
    pub sleeping: Option<(bool, bool)>,
}

/// What `process` stopped at.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Everything complete was answered (or the connection is to close).
    Idle,
    /// A `/sleep?ms=N` request: call [`Session::wake`] after N ms.
    Sleep(u64),
}

impl Session {
    /// A fresh connection's state, answering as `service`.
    pub fn new(service: &'static str) -> Session {
        Session {
            service,
            skip: 0,
            close_after: false,
            sleeping: None,
        }
    }

    /// Answers every complete request at the front of `input` into `out`, in order, and removes
    /// the consumed bytes. Does nothing while a `/sleep` is pending or after a close decision.
    pub fn process(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> Next {
        let mut start = 0;
        let mut next = Next::Idle;
        while self.sleeping.is_none() && !self.close_after {
            if self.skip > 0 {
                let n = self.skip.min((input.len() - start) as u64);
                start += n as usize;
                self.skip -= n;
                if self.skip > 0 {
                    break;
                }
            }
            if start == input.len() {
                break;
            }
            match parse(&input[start..]) {
                Parsed::Partial => {
                    if input.len() - start > MAX_HEAD_BYTES {
                        Reply::empty(Status::HeadersTooLarge).encode(self.service, false, out);
                        self.close_after = true;
                    }
                    break;
                }
                Parsed::Invalid(status) => {
                    Reply::empty(status).encode(self.service, false, out);
                    self.close_after = true;
                }
                Parsed::Request {
                    head_len,
                    route,
                    keep_alive,
                    said_close,
                    body_len,
                } => {
                    start += head_len;
                    self.skip = body_len;
                    if let Route::Sleep { ms } = route {
                        self.sleeping = Some((said_close, keep_alive));
                        next = Next::Sleep(ms);
                        break;
                    }
                    crate::burn::per_request();
                    Reply::for_route(route).encode(self.service, said_close, out);
                    self.close_after = !keep_alive;
                }
            }
        }
        input.drain(..start);
        next
    }

    /// The pending `/sleep` is over: answer it.
    pub fn wake(&mut self, out: &mut Vec<u8>) {
        if let Some((said_close, keep_alive)) = self.sleeping.take() {
            crate::burn::per_request();
            Reply::for_route(Route::Sleep { ms: 0 }).encode(self.service, said_close, out);
            self.close_after = !keep_alive;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: &str = "ping-test";

    fn run(s: &mut Session, input: &[u8]) -> (Next, String, Vec<u8>) {
        let mut input = input.to_vec();
        let mut out = Vec::new();
        let next = s.process(&mut input, &mut out);
        (next, String::from_utf8(out).unwrap(), input)
    }

    #[test]
    fn pipelined_requests_answered_in_order_partial_kept() {
        let mut s = Session::new(SERVICE);
        let (next, out, rest) = run(
            &mut s,
            b"GET /ping HTTP/1.1\r\n\r\nGET /json HTTP/1.1\r\n\r\nGET /pi",
        );
        assert_eq!(next, Next::Idle);
        assert_eq!(out.matches("HTTP/1.1 200 OK").count(), 2);
        assert!(out.ends_with("{\"message\":\"Hello, World!\"}"));
        assert_eq!(rest, b"GET /pi");
        assert!(!s.close_after);
    }

    #[test]
    fn sleep_stops_processing_until_woken() {
        let mut s = Session::new(SERVICE);
        let (next, out, rest) = run(
            &mut s,
            b"GET /sleep?ms=5 HTTP/1.1\r\nConnection: close\r\n\r\nGET /ping HTTP/1.1\r\n\r\n",
        );
        assert_eq!((next, out.as_str()), (Next::Sleep(5), ""));
        assert!(s.sleeping.is_some());
        let mut input = rest;
        let mut out = Vec::new();
        assert_eq!(s.process(&mut input, &mut out), Next::Idle);
        assert!(out.is_empty(), "nothing answered while asleep");
        s.wake(&mut out);
        let out = String::from_utf8(out).unwrap();
        assert!(out.ends_with("Connection: close\r\n\r\npong"));
        assert!(s.close_after);
    }

    #[test]
    fn bodies_skipped_errors_close() {
        let mut s = Session::new(SERVICE);
        let (_, out, rest) = run(
            &mut s,
            b"POST /ping HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /ping HTTP/1.0\r\n\r\n",
        );
        assert!(out.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
        assert!(out.ends_with("pong"));
        assert!(rest.is_empty() && s.close_after, "HTTP/1.0 closes");
        let mut s = Session::new(SERVICE);
        let (_, out, _) = run(&mut s, b"\x00garbage\r\n\r\nGET /ping HTTP/1.1\r\n\r\n");
        assert!(out.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert_eq!(out.matches("HTTP/1.1").count(), 1);
        assert!(s.close_after);
        let many: String = (0..=crate::MAX_HEADERS)
            .map(|i| format!("X{i}: v\r\n"))
            .collect();
        let mut s = Session::new(SERVICE);
        let (_, out, _) = run(
            &mut s,
            format!("GET /ping HTTP/1.1\r\n{many}\r\n").as_bytes(),
        );
        assert!(out.starts_with("HTTP/1.1 431 "));
    }
}
