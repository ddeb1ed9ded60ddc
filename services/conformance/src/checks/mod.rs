//! The contract checks, one function per contract point, each taking a service binary name.
//! `tests/contract.rs` runs all of them against every service.

pub mod burn;
pub mod connection;
pub mod edges;
pub mod endpoints;
pub mod h2c;
pub mod load;
pub mod process;
pub mod robustness;
pub mod tls;
