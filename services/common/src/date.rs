//! Cached RFC 7231 `Date` value (IMF-fixdate, 29 bytes), re-formatted at most once per second
//! per thread, so services pay about one clock read per response.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const DATE_LEN: usize = 29;

struct Cached {
    unix_s: u64,
    value: [u8; DATE_LEN],
}

thread_local! {
    static CACHE: RefCell<Cached> = const { RefCell::new(Cached { unix_s: u64::MAX, value: [0; DATE_LEN] }) };
}

/// Calls `f` with the current `Date` header value.
pub fn with_date<R>(f: impl FnOnce(&[u8; DATE_LEN]) -> R) -> R {
    let now = SystemTime::now();
    let unix_s = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.unix_s != unix_s {
            let s = httpdate::fmt_http_date(now);
            // fmt_http_date always yields 29 ASCII bytes for dates after 1970 and before 10000.
            if s.len() == DATE_LEN {
                c.value.copy_from_slice(s.as_bytes());
            }
            c.unix_s = unix_s;
        }
        f(&c.value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_parses_and_is_now() {
        let s = with_date(|d| String::from_utf8_lossy(d).into_owned());
        assert_eq!(s.len(), DATE_LEN);
        assert!(s.ends_with(" GMT"));
        let t = httpdate::parse_http_date(&s).unwrap();
        let skew = SystemTime::now().duration_since(t).unwrap_or_default();
        assert!(skew.as_secs() <= 2);
    }
}
