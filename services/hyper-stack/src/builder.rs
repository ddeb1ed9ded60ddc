//! hyper's connection builder as every hyper-served ping service configures it, the contract
//! points it does not meet (deviations), and the cached `Date` value.

use std::cell::RefCell;

use hyper::header::HeaderValue;
use hyper::server::conn::http1;
use ping_common::startup::{Deviation, deviation};

/// hyper's `http1::Builder` as every hyper-served ping service configures it.
pub fn builder() -> http1::Builder {
    let mut http = http1::Builder::new();
    http.keep_alive(true)
        // Batch the responses to pipelined requests into one write, as TechEmpower's entry does.
        .pipeline_flush(true)
        // Half-close (contract): a client's FIN ends its requests, not the responses. Without
        // this, hyper closes at the read EOF and drops the responses it has not written yet.
        .half_close(true)
        // Canonical header-name case (`Content-Length`, not hyper's default lower case).
        .title_case_headers(true)
        // Request-head limit. hyper checks it only after a read leaves the head incomplete, so
        // a head may reach up to twice this before it is refused (431): half the contract's
        // 64 KiB keeps every head over 64 KiB refused.
        .max_buf_size(ping_common::MAX_HEAD_BYTES / 2);
    http
}

/// Contract points hyper's connection handling does not meet (with `builder()`'s settings).
pub fn deviations() -> Vec<Deviation> {
    vec![
        Deviation::new(
            deviation::LIBRARY_ERROR_RESPONSES,
            "hyper handles unparsable and oversized heads itself: it closes the connection \
             (as observed), and where it does answer, its 400/431 has no Server header",
        ),
        Deviation::new(
            deviation::STATUS_LINE_HTTP10,
            "hyper answers HTTP/1.0 requests with an HTTP/1.0 status line",
        ),
        Deviation::new(
            deviation::PIPELINE_ERROR_DROPS_BATCH,
            "with pipeline_flush, a malformed request closes the connection before the \
             buffered responses to earlier requests of the same batch are written",
        ),
    ]
}

thread_local! {
    static DATE: RefCell<Option<HeaderValue>> = const { RefCell::new(None) };
}

/// The `Date` value as a `HeaderValue`, rebuilt only when the cached date's bytes change (a
/// clone is a reference-count bump), so we do no more work than hyper's own cached date.
pub fn date_value() -> HeaderValue {
    ping_common::date::with_date(|now| {
        DATE.with(|c| {
            let mut c = c.borrow_mut();
            if c.as_ref().is_none_or(|v| v.as_bytes() != now.as_slice()) {
                *c = HeaderValue::from_bytes(now).ok();
            }
            c.clone().unwrap_or_else(|| HeaderValue::from_static(""))
        })
    })
}
