//! A scenario's `headers`: extra request headers, sent by loadgen on every request and by the
//! instruction count's own connection, in order. Either a list of "Name: value" strings (as
//! `curl -H` takes them) or a built-in set by name. A header that could break the request —
//! a name that is not an HTTP token, a value with CR, LF or another control character, or one
//! of the headers loadgen writes itself — is refused with the key's file:line:col.

use std::ops::Range;

use toml::Spanned;

use super::Errs;

/// `headers = "browser-like"`: the headers Chrome 120 on Linux sends on a top-level
/// navigation typed into the address bar (no cookies, no referrer), in its order, as its
/// network panel shows them — `Host` aside, which loadgen writes. 14 headers, 631 bytes with their line ends: the
/// shape of a browser's request that a parser's header loop sees, where loadgen's default
/// request has only `Host`.
pub const BROWSER_LIKE: &[&str] = &[
    "Cache-Control: max-age=0",
    "sec-ch-ua: \"Not_A Brand\";v=\"8\", \"Chromium\";v=\"120\", \"Google Chrome\";v=\"120\"",
    "sec-ch-ua-mobile: ?0",
    "sec-ch-ua-platform: \"Linux\"",
    "Upgrade-Insecure-Requests: 1",
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
     Chrome/120.0.0.0 Safari/537.36",
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,\
     image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7",
    "Sec-Fetch-Site: none",
    "Sec-Fetch-Mode: navigate",
    "Sec-Fetch-User: ?1",
    "Sec-Fetch-Dest: document",
    "Accept-Encoding: gzip, deflate, br",
    "Accept-Language: en-US,en;q=0.9",
    "Connection: keep-alive",
];

/// The built-in sets by name.
pub const SETS: &[(&str, &[&str])] = &[("browser-like", BROWSER_LIKE)];

/// At most this many extra headers: with `Host`, 16 — the smallest header limit of a service
/// here (may-minihttp's); more would fail its requests, not measure them.
pub const MAX_HEADERS: usize = 15;
/// Bytes of all extra headers together: far under every service's request-head limit.
pub const MAX_BYTES: usize = 4096;

/// Headers loadgen writes itself (`Host`; `Connection: close` without keep-alive) or that
/// would announce a body it does not send. `Connection: keep-alive` is allowed: it is what
/// a keep-alive connection means anyway, and browsers send it.
const RESERVED: &[&str] = &["host", "content-length", "transfer-encoding"];

/// An HTTP token (RFC 9110 §5.6.2): what a header name may be.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// One "Name: value" as it will be sent ("Name: value", the value trimmed), or why not.
pub fn parse(h: &str, keepalive_only: bool) -> Result<String, String> {
    let Some((name, value)) = h.split_once(':') else {
        return Err(format!("{h:?} is not \"Name: value\""));
    };
    if !is_token(name) {
        return Err(format!(
            "{name:?} is not a header name (letters, digits and !#$%&'*+-.^_`|~, no spaces)"
        ));
    }
    let value = value.trim_matches([' ', '\t']);
    if let Some(c) = value
        .chars()
        .find(|&c| (c.is_control() && c != '\t') || !c.is_ascii())
    {
        return Err(format!(
            "the value of {name} has {c:?}: a header value is printable ASCII (CR or LF would \
             end the header and forge the rest of the request)"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if RESERVED.contains(&lower.as_str()) {
        return Err(format!(
            "{name} is written by loadgen (Host) or would announce a body that is not sent"
        ));
    }
    if lower == "connection" && !keepalive_only {
        return Err("Connection: loadgen writes it (\"close\" when keepalive = false)".to_string());
    }
    Ok(format!("{name}: {value}"))
}

/// The scenario's headers, checked; errors at the key's location.
pub(super) fn check(
    errs: &mut Errs,
    v: &Spanned<toml::Value>,
    keepalive: bool,
    field: String,
) -> Vec<String> {
    let span: Range<usize> = v.span();
    let list: Vec<String> = match v.get_ref() {
        toml::Value::String(name) => match SETS.iter().find(|(n, _)| n == name) {
            // Without keep-alive loadgen writes `Connection: close` in place of the set's.
            Some((_, set)) => set
                .iter()
                .filter(|h| keepalive || !h.starts_with("Connection:"))
                .map(|s| s.to_string())
                .collect(),
            None => {
                let known: Vec<&str> = SETS.iter().map(|(n, _)| *n).collect();
                errs.at(
                    span,
                    field,
                    format!(
                        "{name:?} is not a built-in header set (known: {}); or give a list of \
                         \"Name: value\"",
                        known.join(", ")
                    ),
                );
                return vec![];
            }
        },
        toml::Value::Array(a) => {
            let mut out = Vec::new();
            for (j, h) in a.iter().enumerate() {
                match h.as_str() {
                    Some(s) => out.push(s.to_string()),
                    None => {
                        errs.at(
                            span.clone(),
                            format!("{field}[{j}]"),
                            "must be a string \"Name: value\"",
                        );
                        return vec![];
                    }
                }
            }
            out
        }
        _ => {
            errs.at(
                span,
                field,
                "must be a list of \"Name: value\" strings or the name of a built-in set \
                 (\"browser-like\")",
            );
            return vec![];
        }
    };
    let mut out = Vec::new();
    for (j, h) in list.iter().enumerate() {
        match parse(h, keepalive) {
            Ok(h) => out.push(h),
            Err(e) => errs.at(span.clone(), format!("{field}[{j}]"), e),
        }
    }
    let bytes: usize = out.iter().map(|h| h.len() + 2).sum();
    if out.len() > MAX_HEADERS || bytes > MAX_BYTES {
        errs.at(
            span,
            field,
            format!(
                "{} headers, {bytes} bytes: at most {MAX_HEADERS} headers and {MAX_BYTES} \
                 bytes (with Host, 16 headers is the smallest limit of a service here)",
                out.len()
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_set_is_valid_and_bad_headers_say_why() {
        for h in BROWSER_LIKE {
            assert_eq!(parse(h, true).as_deref(), Ok(*h));
        }
        assert!(BROWSER_LIKE.len() <= MAX_HEADERS);
        assert_eq!(parse("X-A:  b ", true).unwrap(), "X-A: b");
        for (bad, why) in [
            ("X-A b", "not \"Name: value\""),
            ("X A: b", "not a header name"),
            (": b", "not a header name"),
            ("X-A: b\r\nX-Forged: 1", "CR or LF"),
            ("X-A: b\nc", "CR or LF"),
            ("X-A: b\0", "CR or LF"),
            ("X-A: é", "printable ASCII"),
            ("Host: elsewhere", "written by loadgen"),
            ("content-length: 5", "body"),
        ] {
            let e = parse(bad, true).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(parse("Connection: close", false).is_err());
    }
}
