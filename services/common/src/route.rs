//! Routing, `/sleep?ms=N` query and `Content-Length` value parsing: the same decisions for
//! every service.

use crate::MAX_SLEEP_MS;

/// What a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /ping` → `pong`.
    Ping,
    /// `GET /json` → `{"message":"Hello, World!"}`.
    Json,
    /// `GET /sleep?ms=N` → `pong` after an asynchronous wait of N ms.
    Sleep { ms: u64 },
    /// Known path, bad or missing query (only `/sleep` has one) → 400.
    BadQuery,
    /// Unknown path → 404.
    NotFound,
    /// Known path, method other than GET → 405.
    MethodNotAllowed,
}

/// Routes a request by method and request-target (origin form, e.g. `/sleep?ms=5`).
pub fn route(method: &str, target: &str) -> Route {
    // Absolute form (`http://host/ping`) is legal in HTTP/1.1; route on its path like hyper does.
    let target = absolute_form_path(target).unwrap_or(target);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let known = matches!(path, "/ping" | "/json" | "/sleep");
    if !known {
        return Route::NotFound;
    }
    // Methods are case-sensitive (RFC 9110 §9.1); HEAD is not offered either.
    if method != "GET" {
        return Route::MethodNotAllowed;
    }
    match path {
        "/ping" => Route::Ping,
        "/json" => Route::Json,
        _ => match query.and_then(sleep_ms) {
            Some(ms) => Route::Sleep { ms },
            None => Route::BadQuery,
        },
    }
}

/// The path of an absolute-form target, if it is one. The scheme is case-insensitive
/// (RFC 3986 §3.1): `HTTP://EXAMPLE.COM/ping` is `/ping`, as hyper routes it.
fn absolute_form_path(target: &str) -> Option<&str> {
    let rest = ["http://", "https://"].iter().find_map(|scheme| {
        let head = target.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &target[scheme.len()..])
    })?;
    Some(rest.find('/').map_or("/", |i| &rest[i..]))
}

/// Parses `ms=N` (decimal digits only, 0 ≤ N ≤ 10000) from a query string; other parameters
/// are ignored, a repeated `ms` is rejected.
pub fn sleep_ms(query: &str) -> Option<u64> {
    let mut found = None;
    for pair in query.split('&') {
        if let Some(v) = pair.strip_prefix("ms=") {
            if found.is_some() || v.is_empty() || v.len() > 5 {
                return None;
            }
            if !v.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let ms: u64 = v.parse().ok()?;
            if ms > MAX_SLEEP_MS {
                return None;
            }
            found = Some(ms);
        }
    }
    found
}

/// Parses a `Content-Length` value: decimal digits only (surrounding whitespace allowed), at
/// most 19 of them so it fits a `u64`; anything else is `None` (the request gets 400).
pub fn content_length(value: &[u8]) -> Option<u64> {
    let v = value.trim_ascii();
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("GET", "/ping"), Route::Ping);
        assert_eq!(route("GET", "/ping?x=1"), Route::Ping);
        assert_eq!(route("GET", "/json"), Route::Json);
        assert_eq!(route("GET", "/sleep?ms=0"), Route::Sleep { ms: 0 });
        assert_eq!(
            route("GET", "/sleep?a=b&ms=10000"),
            Route::Sleep { ms: 10_000 }
        );
        assert_eq!(route("GET", "http://h:1/ping"), Route::Ping);
        assert_eq!(route("GET", "http://h:1"), Route::NotFound);
        assert_eq!(route("GET", "HTTP://EXAMPLE.COM/ping"), Route::Ping);
        assert_eq!(route("GET", "HtTpS://h/json?x=1"), Route::Json);
        assert_eq!(route("GET", "httpx://h/ping"), Route::NotFound);
        assert_eq!(route("GET", "/"), Route::NotFound);
        assert_eq!(route("GET", "/pingx"), Route::NotFound);
        assert_eq!(route("POST", "/nope"), Route::NotFound);
        assert_eq!(route("POST", "/ping"), Route::MethodNotAllowed);
        assert_eq!(route("get", "/ping"), Route::MethodNotAllowed);
        assert_eq!(route("HEAD", "/json"), Route::MethodNotAllowed);
        assert_eq!(route("PUT", "/sleep?ms=1"), Route::MethodNotAllowed);
    }

    #[test]
    fn bad_sleep_queries() {
        for t in [
            "/sleep",
            "/sleep?",
            "/sleep?ms=",
            "/sleep?ms=-1",
            "/sleep?ms=+1",
            "/sleep?ms=1.5",
            "/sleep?ms=abc",
            "/sleep?ms=10001",
            "/sleep?ms=99999999999999999999",
            "/sleep?ms=1&ms=2",
            "/sleep?MS=1",
        ] {
            assert_eq!(route("GET", t), Route::BadQuery, "{t}");
        }
    }

    #[test]
    fn content_length_values() {
        assert_eq!(content_length(b" 11 "), Some(11));
        assert_eq!(content_length(b"0"), Some(0));
        for bad in [
            &b""[..],
            b"x",
            b"-1",
            b"+1",
            b"1 1",
            b"99999999999999999999",
        ] {
            assert_eq!(content_length(bad), None, "{bad:?}");
        }
    }
}
