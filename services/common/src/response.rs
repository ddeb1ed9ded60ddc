//! The canonical response: status, headers in a fixed order and case, bodies.
//!
//! ```text
//! HTTP/1.1 200 OK\r\n
//! Server: <service name>\r\n
//! Date: <IMF-fixdate>\r\n
//! Allow: GET\r\n                      (405 only)
//! Content-Length: <n>\r\n
//! Content-Type: text/plain\r\n        (only with a body)
//! Connection: close\r\n               (only if the request said so)
//! \r\n
//! <body>
//! ```
//! This is the order hyper writes when given these headers (it moves `Content-Length` of an
//! empty body after the others, hence `Allow` first), and the order may_minihttp writes for
//! every response except 405.

use std::io::Write;

use serde::Serialize;

use crate::route::Route;

pub const CONTENT_TYPE_TEXT: &str = "text/plain";
pub const CONTENT_TYPE_JSON: &str = "application/json";
pub const PONG: &str = "pong";

/// The JSON body type, serialized per request.
#[derive(Debug, Serialize)]
pub struct Message {
    pub message: &'static str,
}

/// `{"message":"Hello, World!"}`, serialized now (deliberately not cached: that is the work
/// the `/json` endpoint measures).
pub fn json_body() -> Vec<u8> {
    serde_json::to_vec(&Message {
        message: "Hello, World!",
    })
    .unwrap_or_default()
}

/// Response statuses the contract uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    BadRequest,
    NotFound,
    MethodNotAllowed,
    HeadersTooLarge,
}

impl Status {
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::BadRequest => 400,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::HeadersTooLarge => 431,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::BadRequest => "Bad Request",
            Status::NotFound => "Not Found",
            Status::MethodNotAllowed => "Method Not Allowed",
            Status::HeadersTooLarge => "Request Header Fields Too Large",
        }
    }
}

/// Response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    Pong,
    Json(Vec<u8>),
    Empty,
}

/// A response, independent of the HTTP library that will encode it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: Status,
    pub body: Body,
}

impl Reply {
    pub fn empty(status: Status) -> Self {
        Reply {
            status,
            body: Body::Empty,
        }
    }

    /// The reply for a route; for `Sleep` the caller must have slept already.
    pub fn for_route(route: Route) -> Self {
        match route {
            Route::Ping | Route::Sleep { .. } => Reply {
                status: Status::Ok,
                body: Body::Pong,
            },
            Route::Json => Reply {
                status: Status::Ok,
                body: Body::Json(json_body()),
            },
            Route::BadQuery => Reply::empty(Status::BadRequest),
            Route::NotFound => Reply::empty(Status::NotFound),
            Route::MethodNotAllowed => Reply::empty(Status::MethodNotAllowed),
        }
    }

    pub fn body_bytes(&self) -> &[u8] {
        match &self.body {
            Body::Pong => PONG.as_bytes(),
            Body::Json(v) => v,
            Body::Empty => b"",
        }
    }

    pub fn content_type(&self) -> Option<&'static str> {
        match self.body {
            Body::Pong => Some(CONTENT_TYPE_TEXT),
            Body::Json(_) => Some(CONTENT_TYPE_JSON),
            Body::Empty => None,
        }
    }

    /// Value of the `Allow` header (405 only).
    pub fn allow(&self) -> Option<&'static str> {
        (self.status == Status::MethodNotAllowed).then_some("GET")
    }

    /// Appends the canonical bytes of this reply, with the given `Date` value. `close`: the
    /// request said `Connection: close`, which the response echoes as its last header.
    pub fn encode_with_date(&self, server: &str, date: &[u8], close: bool, out: &mut Vec<u8>) {
        let body = self.body_bytes();
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(itoa3(self.status.code()).as_slice());
        out.push(b' ');
        out.extend_from_slice(self.status.reason().as_bytes());
        out.extend_from_slice(b"\r\nServer: ");
        out.extend_from_slice(server.as_bytes());
        out.extend_from_slice(b"\r\nDate: ");
        out.extend_from_slice(date);
        if let Some(allow) = self.allow() {
            out.extend_from_slice(b"\r\nAllow: ");
            out.extend_from_slice(allow.as_bytes());
        }
        // Written straight into `out`: no per-response String for the number.
        let _ = write!(out, "\r\nContent-Length: {}", body.len());
        if let Some(ct) = self.content_type() {
            out.extend_from_slice(b"\r\nContent-Type: ");
            out.extend_from_slice(ct.as_bytes());
        }
        if close {
            out.extend_from_slice(b"\r\nConnection: close");
        }
        out.extend_from_slice(b"\r\n\r\n");
        out.extend_from_slice(body);
    }

    /// Appends the canonical bytes of this reply with the current cached `Date`.
    pub fn encode(&self, server: &str, close: bool, out: &mut Vec<u8>) {
        crate::date::with_date(|d| self.encode_with_date(server, d, close, out));
    }
}

fn itoa3(code: u16) -> [u8; 3] {
    [
        b'0' + (code / 100 % 10) as u8,
        b'0' + (code / 10 % 10) as u8,
        b'0' + (code % 10) as u8,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

    fn bytes(r: Route) -> String {
        let mut out = Vec::new();
        Reply::for_route(r).encode_with_date("svc", DATE, false, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn canonical_bytes_match_the_readme() {
        assert_eq!(
            bytes(Route::Ping),
            "HTTP/1.1 200 OK\r\nServer: svc\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 4\r\nContent-Type: text/plain\r\n\r\npong"
        );
        assert_eq!(
            bytes(Route::Json),
            "HTTP/1.1 200 OK\r\nServer: svc\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 27\r\nContent-Type: application/json\r\n\r\n{\"message\":\"Hello, World!\"}"
        );
        assert_eq!(
            bytes(Route::MethodNotAllowed),
            "HTTP/1.1 405 Method Not Allowed\r\nServer: svc\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nAllow: GET\r\nContent-Length: 0\r\n\r\n"
        );
        assert_eq!(
            bytes(Route::NotFound),
            "HTTP/1.1 404 Not Found\r\nServer: svc\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n"
        );
        assert!(bytes(Route::BadQuery).starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert_eq!(bytes(Route::Sleep { ms: 3 }), bytes(Route::Ping));
        let mut out = Vec::new();
        Reply::for_route(Route::Ping).encode_with_date("svc", DATE, true, &mut out);
        assert!(out.ends_with(b"Content-Type: text/plain\r\nConnection: close\r\n\r\npong"));
    }

    #[test]
    fn json_body_is_serde_output() {
        assert_eq!(json_body(), br#"{"message":"Hello, World!"}"#);
    }
}
