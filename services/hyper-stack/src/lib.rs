//! The hyper HTTP/1 stack shared by every hyper-served service (ping-tokio-hyper,
//! ping-tokio-per-core, ping-axum): the connection builder and the deviations it implies
//! (`builder`), the cached `Date` value and the request handler (`handler`), the
//! connection I/O (`io`, `framing`) and the accept loop (`accept`, with TLS where the
//! protocol is a TLS one). One copy, so the services differ only in what they are
//! meant to compare (scheduler model, framework).

pub mod accept;
pub mod builder;
pub mod framing;
pub mod handler;
pub mod io;

pub use accept::{Protocol, serve};
pub use builder::{builder, date_value, deviations};
pub use io::CloseAwareIo;
