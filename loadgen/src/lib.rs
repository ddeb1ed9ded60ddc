//! loadgen: closed- and open-loop HTTP/1.1 load with exact accounting.
//!
//! `run(&LoadSpec) -> Result<Report>` is the whole API; the binary only parses flags and prints.

mod backend;
mod check;
pub mod cli;
pub mod floor;
pub mod http;
mod merge;
pub mod recorder;
pub mod report;
mod run;
pub mod spec;
mod sys;
pub mod text;
mod worker;

pub use backend::choose as choose_io;
pub use check::{BUSY_REASON, send_lag_limit_us};
pub use merge::percentiles;
pub use report::Report;
pub use run::{hdr_v2_b64, run};
pub use spec::{DEFAULT_COALESCE_US, IoChoice, LoadModel, LoadSpec};
