//! HTTP/1.1 client wire format: the target URL, pre-serialized request bytes, and an
//! incremental response framer that never copies bodies.

pub mod request;
pub mod response;
pub mod target;
