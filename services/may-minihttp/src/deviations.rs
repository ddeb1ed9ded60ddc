//! Contract points may_minihttp 0.1.11 does not meet, declared in the start-up line.
//!
//! All come from the library's connection loop and encoder, which an `HttpService` cannot
//! reach; replacing them would no longer measure may_minihttp.

use ping_common::startup::{Deviation, deviation};

pub fn declared() -> Vec<Deviation> {
    vec![
        Deviation::new(
            deviation::REASON_PHRASE_200,
            "the library writes `HTTP/1.1 200 Ok` for every 200",
        ),
        Deviation::new(
            deviation::SERVER_HEADER,
            "the library writes `Server: M` into every response",
        ),
        Deviation::new(
            deviation::HEADER_ORDER_405,
            "the library writes Content-Length before the service's headers, so a 405 has \
             Content-Length before Allow",
        ),
        Deviation::new(
            deviation::MAX_HEADERS_16,
            "at most 16 request headers; a 17th closes the connection without a response",
        ),
        Deviation::new(
            deviation::CONNECTION_CLOSE_IGNORED,
            "`Connection: close` and HTTP/1.0 requests are answered but the connection stays \
             open until the client closes it",
        ),
        Deviation::new(
            deviation::NO_HEAD_SIZE_CAP,
            "an incomplete request head is buffered without limit; complete heads over 64 KiB \
             get 431 from the service",
        ),
        Deviation::new(
            deviation::PIPELINE_ERROR_DROPS_BATCH,
            "a malformed request closes the connection without a response, dropping the \
             responses to earlier requests of the same read",
        ),
        Deviation::new(
            deviation::HALF_CLOSE_DROPS_REQUESTS,
            "after the client's FIN (shutdown of its write side) the library's connection loop \
             fails on the read EOF before it answers the requests read with it, and closes: \
             requests pipelined just before a FIN are dropped unanswered",
        ),
    ]
}
