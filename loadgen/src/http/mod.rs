//! The client wire formats: the target URL, pre-serialized request bytes, and incremental
//! response framers that never copy bodies — HTTP/1.1, and HTTP/2 over cleartext (`h2`).

pub mod h2;
pub mod hpack;
pub mod request;
pub mod response;
pub mod target;
