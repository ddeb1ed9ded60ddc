//! The ping service contract, defined once (see `services/README.md`).
//!
//! Every service binary uses this crate for the parts that must not differ between runtimes:
//! command line, allowed-CPU count, the start-up JSON line, routing and sleep-query parsing,
//! the JSON body, the cached `Date` value, the canonical response bytes and the `--burn-ns`
//! per-request cost. The HTTP and
//! runtime parts live in each service crate.

pub mod burn;
pub mod cli;
pub mod cpus;
pub mod date;
pub mod http1;
pub mod listen;
pub mod per_core;
pub mod request;
pub mod response;
pub mod route;
pub mod split;
pub mod startup;

/// Largest request head (request line + headers) a service must buffer; beyond it: 431 or close.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Request headers every service must accept (hyper allows 100, the monoio loop exactly this).
pub const MAX_HEADERS: usize = 64;
/// Upper bound of `/sleep?ms=N`.
pub const MAX_SLEEP_MS: u64 = 10_000;
