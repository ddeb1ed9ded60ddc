//! loadgen: closed- and open-loop HTTP/1.1 load with exact accounting.
//!
//! `run(&LoadSpec) -> Result<Report>` is the whole API; the binary only parses flags and prints.

pub mod report;
pub mod spec;

pub use report::Report;
pub use spec::{LoadModel, LoadSpec};
