//! Request bytes, serialized once per run. A pipelined batch of `n` requests is the first
//! `n * one_len` bytes of `batch`, so every send is one `send(2)` from a fixed buffer.

use super::target::Target;
use crate::spec::Protocol;

#[derive(Debug, Clone)]
pub struct RequestBytes {
    /// HTTP/1.1: `depth` copies of the request back to back.
    pub batch: Vec<u8>,
    /// Length of one request.
    pub one_len: usize,
    /// h2c: the header block every stream's HEADERS frame carries (`None`: HTTP/1.1).
    pub h2_block: Option<Vec<u8>>,
}

impl RequestBytes {
    /// The request for `protocol`; an h2c request HTTP/2 cannot carry is an error.
    pub fn new(
        target: &Target,
        headers: &[(String, String)],
        keepalive: bool,
        depth: u32,
        protocol: Protocol,
    ) -> Result<Self, String> {
        if protocol.is_h2() {
            return Ok(Self {
                batch: Vec::new(),
                one_len: 0,
                h2_block: Some(super::h2::request_block(
                    &target.path,
                    &target.host_header,
                    headers,
                )?),
            });
        }
        let mut one = format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\n",
            target.path, target.host_header
        );
        for (k, v) in headers {
            one.push_str(k);
            one.push_str(": ");
            one.push_str(v);
            one.push_str("\r\n");
        }
        if !keepalive {
            one.push_str("Connection: close\r\n");
        }
        one.push_str("\r\n");
        let one = one.into_bytes();
        Ok(Self {
            batch: one.repeat(depth.max(1) as usize),
            one_len: one.len(),
            h2_block: None,
        })
    }
}
