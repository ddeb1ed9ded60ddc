//! The request head as the hand-written services (monoio, epoll, glommio, compio) read it:
//! httparse over the front of the read buffer, then the contract's rules for
//! `Connection`, `Content-Length` and `Transfer-Encoding`. One parser, so those services
//! cannot disagree about a request.

use crate::response::Status;
use crate::route::{Route, content_length, route};
use crate::{MAX_HEAD_BYTES, MAX_HEADERS};

/// Outcome of parsing the front of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Partial,
    Invalid(Status),
    Request {
        head_len: usize,
        route: Route,
        keep_alive: bool,
        /// The request said `Connection: close` (echoed, as hyper does).
        said_close: bool,
        body_len: u64,
    },
}

/// Parses one request head at the front of `buf`.
pub fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Invalid(Status::HeadersTooLarge),
        Err(_) => return Parsed::Invalid(Status::BadRequest),
    };
    if head_len > MAX_HEAD_BYTES {
        return Parsed::Invalid(Status::HeadersTooLarge);
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Invalid(Status::BadRequest);
    };
    let mut said_close = false;
    let mut said_keep_alive = false;
    let mut body_len: Option<u64> = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                said_close |= token.eq_ignore_ascii_case(b"close");
                said_keep_alive |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let Some(n) = content_length(h.value) else {
                return Parsed::Invalid(Status::BadRequest);
            };
            if body_len.is_some_and(|prev| prev != n) {
                return Parsed::Invalid(Status::BadRequest);
            }
            body_len = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Invalid(Status::BadRequest);
        }
    }
    let keep_alive = !said_close && (version == 1 || said_keep_alive);
    Parsed::Request {
        head_len,
        route: route(method, target),
        keep_alive,
        said_close,
        body_len: body_len.unwrap_or(0),
    }
}
