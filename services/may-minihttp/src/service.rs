//! The `HttpService`: shared routing, a coroutine sleep, canonical headers where the library
//! lets us choose them, and the end of a connection whose request framing cannot be trusted.

use std::io::{self, BufRead};
use std::os::fd::RawFd;
use std::time::Duration;

use may_minihttp::{HttpService, HttpServiceFactory, Request, Response};
use ping_common::MAX_HEAD_BYTES;
use ping_common::response::{Body, CONTENT_TYPE_JSON, CONTENT_TYPE_TEXT, PONG, Reply, Status};
use ping_common::route::{self, Route};

/// Makes one [`Ping`] per connection. The library names each connection by its socket's fd
/// (`new_service(id)`), the one handle a service has on its connection.
pub struct Factory;

impl HttpServiceFactory for Factory {
    type Service = Ping;

    fn new_service(&self, id: usize) -> Ping {
        Ping {
            fd: RawFd::try_from(id).unwrap_or(-1),
            untrusted: false,
        }
    }
}

/// One connection's service.
pub struct Ping {
    /// The connection's socket (may_minihttp passes it as the service id).
    fd: RawFd,
    /// A request of this connection had a body length we cannot trust: whatever follows it
    /// is not a request boundary we know, so nothing more is answered.
    untrusted: bool,
}

impl HttpService for Ping {
    fn call(&mut self, req: Request, rsp: &mut Response) -> io::Result<()> {
        if self.untrusted {
            // Bytes after an untrusted length, decoded from the same read. The library will
            // write the responses of this read: shut the socket so nothing of it (the 400
            // included) reaches the client, and the library's write fails and ends the
            // connection (a close; pipeline-error-drops-batch, as declared).
            shutdown(self.fd, libc::SHUT_RDWR);
            write(Reply::empty(Status::BadRequest), rsp);
            return Ok(());
        }
        let route = route::route(req.method(), req.path());
        let reply = if head_len(&req) > MAX_HEAD_BYTES {
            Reply::empty(Status::HeadersTooLarge)
        } else {
            match content_length(&req) {
                // The library frames by Content-Length alone, and parses it with unwrap()
                // inside `body()`: an unusable value, or a Transfer-Encoding beside it (the
                // request-smuggling shape, RFC 9112 §6.1 and §6.3), is answered 400 and then
                // the connection closes. Shutting the read side makes the library's next read
                // see EOF after it wrote the 400, and it closes.
                None => {
                    self.untrusted = true;
                    shutdown(self.fd, libc::SHUT_RD);
                    Reply::empty(Status::BadRequest)
                }
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

/// Shuts down one or both directions of the connection's socket; an error (the peer already
/// gone) changes nothing, the connection ends either way.
fn shutdown(fd: RawFd, how: libc::c_int) {
    // SAFETY: `fd` is this connection's socket, open for as long as its service exists
    // (the library drops the service with the connection); shutdown(2) touches no memory.
    let _ = unsafe { libc::shutdown(fd, how) };
}

/// The body length the library may frame by: `Some(0)` without the header; `None` if the
/// value is unparsable, repeated with another value, or if the request has a
/// `Transfer-Encoding` (the library does not decode it and would frame by Content-Length).
fn content_length(req: &Request) -> Option<u64> {
    let mut len = None;
    for h in req.headers() {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return None;
        }
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
