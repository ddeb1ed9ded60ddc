//! Where a service's user-space instructions go: cachegrind's out file read per function, and
//! two runs' files differenced per function the way their totals are (the slope over the
//! requests between them), so start-up and shutdown cancel function by function too.
//!
//! Functions are keyed by their demangled symbol alone, summed over the source files
//! cachegrind splits them into: code inlined from another crate's source is counted in the
//! function it was inlined into, and the same function built from two source paths (a variant
//! under `target/variants/<key>/`) is one row, so two builds compare without remapping paths.
//! A function's crate is read from its symbol ([`crate_of`]).

use std::collections::BTreeMap;

use crate::results::schema::{CrateCost, FUNCTION_MIN_PER_REQUEST, FunctionCost};

/// The crate of functions that are not Rust: the C library and the dynamic loader.
pub const C_CRATE: &str = "libc";

/// Instructions per function of one cachegrind out file (`fn=` blocks, each line `<line> <Ir>`),
/// summed over the files a function appears in.
pub fn by_function(text: &str) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    let mut current: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("fn=") {
            current = Some(name);
            continue;
        }
        if line.starts_with("fl=") || line.contains(':') {
            // A file switches sections, not functions; `desc:`, `cmd:`, `events:` and
            // `summary:` are headers.
            if !line.starts_with("fl=") {
                current = None;
            }
            continue;
        }
        let (Some(f), Some(ir)) = (current, line.split_whitespace().nth(1)) else {
            continue;
        };
        if let Ok(ir) = ir.parse::<u64>() {
            *out.entry(f.to_owned()).or_default() += ir;
        }
    }
    out
}

/// The crate a demangled symbol belongs to: its first path segment; for a trait method
/// `<Type as Trait>::f`, the type's crate, unless that is the standard library's or a
/// primitive (then the code is the trait's crate's: `<[u8] as clap_lex::Ext>::f`); functions
/// without a Rust path are the C library's ([`C_CRATE`]), Rust's allocator shims std's.
pub fn crate_of(symbol: &str) -> String {
    fn first_segment(path: &str) -> Option<&str> {
        let path = path.trim_start_matches(['&', '*']).trim_start();
        let path = path
            .strip_prefix("mut ")
            .or_else(|| path.strip_prefix("const "))
            .unwrap_or(path)
            .trim_start_matches(['&', '*']);
        let seg = path.split("::").next()?;
        (path.contains("::") && !seg.is_empty() && seg.chars().all(is_ident)).then_some(seg)
    }
    fn is_ident(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }
    const STD: [&str; 3] = ["std", "core", "alloc"];
    if let Some(rest) = symbol.strip_prefix('<') {
        // `<Type as Trait>::f`: split at the ` as ` of the outermost angle brackets.
        let mut depth = 0usize;
        let bytes = rest.as_bytes();
        let mut split = None;
        for (i, &b) in bytes.iter().enumerate() {
            match b {
                b'<' => depth += 1,
                b'>' if depth == 0 => break,
                b'>' => depth -= 1,
                b' ' if depth == 0 && rest[i..].starts_with(" as ") => {
                    split = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let (ty, tr) = match split {
            Some(i) => (&rest[..i], Some(&rest[i + 4..])),
            None => (rest, None),
        };
        let ty_crate = first_segment(ty);
        let tr_crate = tr.and_then(first_segment);
        return match (ty_crate, tr_crate) {
            (Some(t), Some(r)) if STD.contains(&t) && !STD.contains(&r) => r.to_owned(),
            (Some(t), _) => t.to_owned(),
            (None, Some(r)) => r.to_owned(),
            (None, None) => "?".to_owned(),
        };
    }
    if symbol.starts_with("__rust_") || symbol.starts_with("__rdl_") || symbol.starts_with("__rg_")
    {
        return "std".to_owned();
    }
    match first_segment(symbol) {
        Some(c) => c.to_owned(),
        None if symbol.starts_with("0x") => "?".to_owned(),
        None => C_CRATE.to_owned(),
    }
}

/// Per function and per crate, the instructions per request between two runs' files:
/// `(after − before) / (n2 − n1)`. Functions at least [`FUNCTION_MIN_PER_REQUEST`] either
/// way, largest first; every crate, largest first (the crates' sums are the total's).
pub fn per_request(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
    requests: u64,
) -> (Vec<FunctionCost>, Vec<CrateCost>) {
    if requests == 0 {
        return (vec![], vec![]);
    }
    let mut functions = Vec::new();
    let mut crates: BTreeMap<String, f64> = BTreeMap::new();
    let names = before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)));
    for name in names {
        let d = after.get(name).copied().unwrap_or(0) as f64
            - before.get(name).copied().unwrap_or(0) as f64;
        if d == 0.0 {
            continue;
        }
        let per = d / requests as f64;
        let krate = crate_of(name);
        *crates.entry(krate.clone()).or_default() += per;
        if per.abs() >= FUNCTION_MIN_PER_REQUEST {
            functions.push(FunctionCost {
                function: name.clone(),
                krate,
                per_request: per,
            });
        }
    }
    functions.sort_by(|a, b| {
        b.per_request
            .total_cmp(&a.per_request)
            .then_with(|| a.function.cmp(&b.function))
    });
    let mut crates: Vec<CrateCost> = crates
        .into_iter()
        .filter(|(_, v)| *v != 0.0)
        .map(|(krate, per_request)| CrateCost { krate, per_request })
        .collect();
    crates.sort_by(|a, b| {
        b.per_request
            .total_cmp(&a.per_request)
            .then_with(|| a.krate.cmp(&b.krate))
    });
    (functions, crates)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_from_symbols() {
        for (sym, want) in [
            ("httparse::Request::parse", "httparse"),
            (
                "<httparse::iter::Bytes as core::iter::traits::iterator::Iterator>::next",
                "httparse",
            ),
            (
                "<std::ffi::os_str::OsStr as clap_lex::ext::OsStrExt>::find::{{closure}}",
                "clap_lex",
            ),
            (
                "<alloc::vec::Vec<u8> as core::clone::Clone>::clone",
                "alloc",
            ),
            ("<[u8] as bytes::Buf>::advance", "bytes"),
            ("<&mut T as std::io::Write>::write", "std"),
            (
                "<hyper::proto::h1::role::Server as hyper::proto::h1::Http1Transaction>::parse",
                "hyper",
            ),
            ("<tokio::net::TcpStream>::poll_read", "tokio"),
            ("tokio::runtime::task::raw::poll::{{closure}}", "tokio"),
            ("ping_epoll::main", "ping_epoll"),
            ("_int_free", "libc"),
            ("__memcpy_avx_unaligned_erms", "libc"),
            ("malloc", "libc"),
            ("__rust_alloc", "std"),
            ("0x0000000000401000", "?"),
        ] {
            assert_eq!(crate_of(sym), want, "{sym}");
        }
    }

    const BEFORE: &str = "desc: I1 cache: x\ncmd: ping\nevents: Ir\n\
        fl=./malloc/malloc.c\nfn=malloc\n10 1000\n11 1000\n\
        fl=/src/httparse-1.10.1/src/lib.rs\nfn=httparse::Request::parse\n5 4000\n\
        fl=/src/core/slice.rs\nfn=httparse::Request::parse\n9 1000\n\
        fn=ping_epoll::main\n1 50\nsummary: 7050\n";
    // The same program at 1,000 more requests, its parse built from another source path.
    const AFTER: &str = "desc: I1 cache: x\ncmd: ping\nevents: Ir\n\
        fl=./malloc/malloc.c\nfn=malloc\n10 3000\n11 3000\nfn=_int_free\n3 2000\n\
        fl=/variants/ab12/src/lib.rs\nfn=httparse::Request::parse\n5 12000\n\
        fl=/src/core/slice.rs\nfn=httparse::Request::parse\n9 3000\n\
        fn=ping_epoll::main\n1 50\nfn=tiny\n1 100\nsummary: 23150\n";

    #[test]
    fn functions_are_summed_over_files_and_differenced_per_request() {
        let b = by_function(BEFORE);
        assert_eq!(b["httparse::Request::parse"], 5000);
        assert_eq!(b["malloc"], 2000);
        assert_eq!(b.values().sum::<u64>(), 7050, "every Ir once");
        let a = by_function(AFTER);
        let (f, c) = per_request(&b, &a, 1000);
        let rows: Vec<(&str, &str, f64)> = f
            .iter()
            .map(|f| (f.function.as_str(), f.krate.as_str(), f.per_request))
            .collect();
        assert_eq!(
            rows,
            [
                ("httparse::Request::parse", "httparse", 10.0),
                ("malloc", "libc", 4.0),
                ("_int_free", "libc", 2.0),
            ],
            "unchanged main left out; `tiny` (0.1/request) under the table's minimum"
        );
        let crates: Vec<(&str, f64)> = c
            .iter()
            .map(|c| (c.krate.as_str(), c.per_request))
            .collect();
        assert_eq!(crates, [("httparse", 10.0), ("libc", 6.1)]);
        let total: f64 = c.iter().map(|c| c.per_request).sum();
        assert!(
            (total - (23150.0 - 7050.0) / 1000.0).abs() < 1e-9,
            "{total}"
        );
        assert_eq!(per_request(&b, &a, 0), (vec![], vec![]));
    }
}
