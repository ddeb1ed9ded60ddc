//! loadgen: closed- and open-loop HTTP load (HTTP/1.1 and HTTP/2, cleartext or over TLS)
//! with exact accounting.
//!
//! `run(&LoadSpec) -> Result<Report>` is the whole API; the binary only parses flags and prints.
//! Beside it, the report format both ways (`hdr`: histograms encoded and decoded) and one load
//! over several hosts (`hosts`: `LoadSpec::split`, `Report::merge`).

mod backend;
mod check;
pub mod cli;
pub mod floor;
mod hdr;
pub mod hosts;
pub mod http;
pub mod identity;
mod merge;
pub mod recorder;
pub mod report;
mod run;
pub mod spec;
mod sys;
pub mod text;
mod tls;
mod worker;

pub use backend::choose as choose_io;
pub use check::{BUSY_REASON, send_lag_limit_us};
pub use hdr::{hdr_v2_b64, hdr_v2_decode};
pub use merge::percentiles;
pub use report::Report;
pub use run::run;
pub use spec::{DEFAULT_COALESCE_US, IoChoice, LoadModel, LoadSpec, Protocol};
