//! End-to-end conformance suite for the ping services (contract: services/README.md).
//!
//! Every check is a function taking a service binary name; `tests/contract.rs` runs every
//! check against every service from one table. Checks start the real binary on a free port,
//! talk raw TCP (so the bytes on the wire are what is checked) and assert declared deviations
//! as declared.

pub mod binary;
pub mod checks;
pub mod client;
pub mod expect;
pub mod io_uring;
pub mod service;
pub mod ss;
