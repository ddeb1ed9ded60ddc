//! The `HttpService`: shared routing, a coroutine sleep, canonical headers where the library
//! lets us choose them.

use std::io::{self, BufRead};
use std::time::Duration;

use may_minihttp::{HttpService, Request, Response};
use ping_common::MAX_HEAD_BYTES;
use ping_common::response::{Body, CONTENT_TYPE_JSON, CONTENT_TYPE_TEXT, PONG, Reply, Status};
use ping_common::route::{self, Route};

#[derive(Clone)]
pub struct Ping;

impl HttpService for Ping {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        let route = route::route(req.method(), req.path());
        let reply = if head_len(&req) > MAX_HEAD_BYTES {
            Reply::empty(Status::HeadersTooLarge)
        } else {
            match content_length(&req) {
                // The library parses Content-Length with unwrap() inside `body()`: never call
                // it for a value we could not parse ourselves.
                None => Reply::empty(Status::BadRequest),
                Some(len) => {
                    if len > 0 {
                        // Unread body bytes would be parsed as the next request. Drain through
                        // BufRead: no stack buffer on the 32 KiB coroutine stack.
                        let mut body = req.body();
                        loop {
                            let n = body.fill_buf()?.len();
                            if n == 0 {
                                break;
                            }
                            body.consume(n);
                        }
                    }
                    if let Route::Sleep { ms } = route {
                        // Parks this coroutine only; the worker runs others meanwhile.
                        may::coroutine::sleep(Duration::from_millis(ms));
                    }
                    ping_common::burn::per_request();
                    Reply::for_route(route)
                }
            }
        };
        write(reply, rsp);
        Ok(())
    }
}

fn write(reply: Reply, rsp: &mut Response) {
    if reply.status != Status::Ok {
        rsp.status_code(usize::from(reply.status.code()), reply.status.reason());
    }
    // Headers must be `&'static str` lines; the library adds Server, Date, Content-Length.
    if reply.allow().is_some() {
        rsp.header("Allow: GET");
    }
    match reply.content_type() {
        Some(CONTENT_TYPE_TEXT) => {
            rsp.header("Content-Type: text/plain");
        }
        Some(CONTENT_TYPE_JSON) => {
            rsp.header("Content-Type: application/json");
        }
        _ => {}
    }
    match reply.body {
        Body::Pong => rsp.body(PONG),
        Body::Json(v) => rsp.body_vec(v),
        Body::Empty => {}
    }
}

/// Approximate request-head size: request line plus `name: value\r\n` per header.
fn head_len(req: &Request) -> usize {
    let line = req.method().len() + req.path().len() + 12;
    line + req
        .headers()
        .iter()
        .map(|h| h.name.len() + h.value.len() + 4)
        .sum::<usize>()
}

/// `Some(0)` without the header, `None` if it is unparsable or repeated with another value.
fn content_length(req: &Request) -> Option<u64> {
    let mut len = None;
    for h in req.headers() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = route::content_length(h.value)?;
            if len.is_some_and(|prev| prev != n) {
                return None;
            }
            len = Some(n);
        }
    }
    Some(len.unwrap_or(0))
}
