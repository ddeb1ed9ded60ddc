//! TechEmpower-style verification before any load: status, required headers (Content-Length,
//! Content-Type, Date in RFC 7231 form and current, Server) and the exact body of every
//! endpoint of the service contract, plus the scenario's own path.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use ping_common::response::{CONTENT_TYPE_JSON, CONTENT_TYPE_TEXT, PONG, json_body};

use super::http;
use crate::results::schema::EndpointCheck;

/// Endpoint, expected Content-Type prefix, exact body (None = any), taken from the contract
/// the services themselves answer with.
fn contract() -> [(&'static str, &'static str, Option<Vec<u8>>); 3] {
    [
        ("/ping", CONTENT_TYPE_TEXT, Some(PONG.as_bytes().to_vec())),
        ("/json", CONTENT_TYPE_JSON, Some(json_body())),
        ("/sleep?ms=20", "", None),
    ]
}

/// Checks every contract endpoint and `extra_path` (if not already covered), over TLS where
/// the service serves it (`tls`).
pub fn verify(
    addr: SocketAddr,
    extra_path: &str,
    timeout: Duration,
    tls: bool,
) -> Vec<EndpointCheck> {
    let contract = contract();
    let mut out: Vec<EndpointCheck> = contract
        .iter()
        .map(|(p, ct, body)| check(addr, p, ct, body.as_deref(), timeout, tls))
        .collect();
    if !contract.iter().any(|(p, _, _)| *p == extra_path) {
        out.extend(verify_path(addr, extra_path, timeout, tls));
    }
    out
}

/// Checks `path` alone, with the contract's rules where it is a contract path (a server
/// the suite did not write need not have the other endpoints).
pub fn verify_path(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
    tls: bool,
) -> Vec<EndpointCheck> {
    let contract = contract();
    let known = contract
        .iter()
        .find(|(p, _, _)| *p == path || *p == path.split('?').next().unwrap_or(""));
    let (ct, body) = match known {
        Some((p, ct, body)) if !p.contains('?') => (*ct, body.as_deref()),
        _ => ("", None),
    };
    vec![check(addr, path, ct, body, timeout, tls)]
}

fn sleep_ms(path: &str) -> Option<u64> {
    path.strip_prefix("/sleep?ms=")?.parse().ok()
}

fn check(
    addr: SocketAddr,
    path: &str,
    ctype: &str,
    body: Option<&[u8]>,
    timeout: Duration,
    tls: bool,
) -> EndpointCheck {
    let mut c = EndpointCheck {
        path: path.into(),
        passed: false,
        status: None,
        problems: vec![],
        headers: Default::default(),
        body_bytes: None,
        latency_us: None,
    };
    let r = match http::get(addr, path, timeout, tls) {
        Ok(r) => r,
        Err(e) => {
            c.problems.push(e);
            return c;
        }
    };
    c.status = Some(r.status);
    c.latency_us = Some(r.elapsed.as_micros() as u64);
    c.body_bytes = Some(r.body.len());
    c.problems = problems(&r, path, ctype, body, SystemTime::now());
    c.headers = r.headers;
    c.passed = c.problems.is_empty();
    c
}

/// Everything wrong with a response (empty = pass).
pub fn problems(
    r: &http::Response,
    path: &str,
    ctype: &str,
    body: Option<&[u8]>,
    now: SystemTime,
) -> Vec<String> {
    let mut p = Vec::new();
    if r.status != 200 {
        p.push(format!("status {} (expected 200)", r.status));
    }
    if r.version != 1 {
        p.push(format!("HTTP/1.{} response (expected HTTP/1.1)", r.version));
    }
    match r.headers.get("date") {
        None => p.push("missing Date header".into()),
        Some(d) => match httpdate::parse_http_date(d) {
            Err(_) => p.push(format!("Date {d:?} is not an RFC 7231 IMF-fixdate")),
            Ok(t) => {
                let skew = now.duration_since(t).unwrap_or_else(|e| e.duration());
                // A Date cached at start-up would drift from the clock: allow 3 s.
                if skew > Duration::from_secs(3) {
                    p.push(format!("Date {d:?} is {} s off the clock", skew.as_secs()));
                }
            }
        },
    }
    if r.headers.get("server").is_none_or(|s| s.trim().is_empty()) {
        p.push("missing Server header".into());
    }
    if !ctype.is_empty() {
        match r.headers.get("content-type") {
            None => p.push(format!("missing Content-Type (expected {ctype})")),
            Some(v) if !v.to_ascii_lowercase().starts_with(ctype) => {
                p.push(format!("Content-Type {v:?} (expected {ctype})"))
            }
            _ => {}
        }
    }
    if let Some(b) = body
        && r.body != b
    {
        p.push(format!(
            "body {:?} (expected {:?})",
            String::from_utf8_lossy(&r.body)
                .chars()
                .take(80)
                .collect::<String>(),
            String::from_utf8_lossy(b)
        ));
    }
    if let Some(ms) = sleep_ms(path)
        && r.elapsed < Duration::from_millis(ms)
    {
        p.push(format!(
            "answered in {} µs, before the requested {ms} ms",
            r.elapsed.as_micros()
        ));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn resp(status: u16, headers: &[(&str, &str)], body: &[u8]) -> http::Response {
        http::Response {
            status,
            reason: "OK".into(),
            version: 1,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            header_count: headers.len(),
            body: body.to_vec(),
            elapsed: Duration::from_millis(1),
        }
    }

    #[test]
    fn good_ping_passes_and_bad_fields_are_named() {
        let now = SystemTime::now();
        let date = httpdate::fmt_http_date(now);
        let good = resp(
            200,
            &[
                ("date", &date),
                ("server", "x"),
                ("content-type", "text/plain"),
                ("content-length", "4"),
            ],
            b"pong",
        );
        assert!(problems(&good, "/ping", "text/plain", Some(b"pong"), now).is_empty());

        let old = httpdate::fmt_http_date(now - Duration::from_secs(60));
        let bad = resp(
            404,
            &[("date", &old), ("content-type", "text/html")],
            b"nope",
        );
        let p = problems(&bad, "/ping", "text/plain", Some(b"pong"), now).join("; ");
        for needle in [
            "status 404",
            "off the clock",
            "Server",
            "Content-Type",
            "body",
        ] {
            assert!(p.contains(needle), "{needle} missing in {p}");
        }
        let fast = resp(200, &[("date", &date), ("server", "x")], b"");
        let p = problems(&fast, "/sleep?ms=20", "", None, now).join("; ");
        assert!(p.contains("before the requested 20 ms"), "{p}");
    }
}
