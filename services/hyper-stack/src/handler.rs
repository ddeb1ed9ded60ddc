//! The request handler of ping-tokio-hyper and ping-tokio-per-core (same handler, other
//! scheduler model): shared routing, an asynchronous sleep, canonical headers in order. The
//! caller names the service (its `Server` header).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Request, Response, StatusCode};
use ping_common::response::{Body, Reply};
use ping_common::route::{Route, route};

use crate::builder::date_value;

/// Answers one request as `service` (the `Server` value).
pub async fn handle(
    service: &'static str,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let route = route(req.method().as_str(), target);
    if let Route::Sleep { ms } = route {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    ping_common::burn::per_request();
    Ok(to_response(service, Reply::for_route(route)))
}

fn to_response(service: &'static str, reply: Reply) -> Response<Full<Bytes>> {
    let content_type = reply.content_type();
    let allow = reply.allow();
    let status = StatusCode::from_u16(reply.status.code()).unwrap_or(StatusCode::OK);
    let body = match reply.body {
        Body::Pong => Bytes::from_static(ping_common::response::PONG.as_bytes()),
        Body::Json(v) => Bytes::from(v),
        Body::Empty => Bytes::new(),
    };
    // Inserted in canonical order; hyper writes a HeaderMap in insertion order.
    let mut headers = hyper::HeaderMap::with_capacity(5);
    headers.insert(header::SERVER, HeaderValue::from_static(service));
    headers.insert(header::DATE, date_value());
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    if let Some(ct) = content_type {
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    if let Some(allow) = allow {
        headers.insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    let mut rsp = Response::new(Full::new(body));
    *rsp.status_mut() = status;
    *rsp.headers_mut() = headers;
    rsp
}
