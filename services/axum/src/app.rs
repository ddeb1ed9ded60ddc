//! The axum application, written the way axum users write one: a `Router` with one handler per
//! route, extractors (`RawQuery`), `Json` for `/json`, a router fallback for 404, method-router
//! fallbacks for 405, and one `map_response` middleware for the headers every response carries.

use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::RawQuery;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Response, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Json};
use axum::routing::{MethodRouter, get};
use ping_common::response::{CONTENT_TYPE_TEXT, Message, PONG};

use crate::SERVICE;
use ping_hyper_stack::date_value;

pub fn router() -> Router {
    Router::new()
        .route("/ping", get_only(get(ping)))
        .route("/json", get_only(get(json)))
        .route("/sleep", get_only(get(sleep)))
        .fallback(not_found)
        .layer(middleware::map_response(canonical_headers))
}

/// axum answers `HEAD` with the `GET` handler and other methods with its own 405
/// (`Allow: GET,HEAD`); the contract wants 405 with `Allow: GET` for both.
fn get_only(route: MethodRouter) -> MethodRouter {
    route.head(method_not_allowed).fallback(method_not_allowed)
}

async fn ping() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, CONTENT_TYPE_TEXT)], PONG)
}

async fn json() -> Json<Message> {
    Json(Message {
        message: "Hello, World!",
    })
}

async fn sleep(RawQuery(query): RawQuery) -> Response<Body> {
    match query.as_deref().and_then(ping_common::route::sleep_ms) {
        Some(ms) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            ping().await.into_response()
        }
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}

async fn method_not_allowed() -> impl IntoResponse {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "GET")])
}

async fn not_found() -> StatusCode {
    StatusCode::NOT_FOUND
}

/// The `--burn-ns` cost, `Server` and `Date` on every response, and the headers in the
/// contract's order (hyper writes a `HeaderMap` in insertion order): Server, Date, Allow,
/// Content-Length, Content-Type, then anything else.
async fn canonical_headers(rsp: Response<Body>) -> Response<Body> {
    // Every routed response passes here once (routes and fallbacks): the `--burn-ns` cost.
    ping_common::burn::per_request();
    let (mut parts, body) = rsp.into_parts();
    let mut headers = HeaderMap::with_capacity(5);
    headers.insert(header::SERVER, HeaderValue::from_static(SERVICE));
    headers.insert(header::DATE, date_value());
    if let Some(allow) = parts.headers.remove(header::ALLOW) {
        headers.insert(header::ALLOW, allow);
    }
    let len = parts
        .headers
        .remove(header::CONTENT_LENGTH)
        .unwrap_or_else(|| HeaderValue::from(body.size_hint().exact().unwrap_or_default()));
    headers.insert(header::CONTENT_LENGTH, len);
    if let Some(ct) = parts.headers.remove(header::CONTENT_TYPE) {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    headers.extend(parts.headers);
    parts.headers = headers;
    Response::from_parts(parts, body)
}
