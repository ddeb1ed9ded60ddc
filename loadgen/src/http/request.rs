//! Request bytes, serialized once per run. A pipelined batch of `n` requests is the first
//! `n * one_len` bytes of `batch`, so every send is one `send(2)` from a fixed buffer.

use super::target::Target;

#[derive(Debug, Clone)]
pub struct RequestBytes {
    /// `depth` copies of the request back to back.
    pub batch: Vec<u8>,
    /// Length of one request.
    pub one_len: usize,
}

impl RequestBytes {
    pub fn new(target: &Target, headers: &[(String, String)], keepalive: bool, depth: u32) -> Self {
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
        Self {
            batch: one.repeat(depth.max(1) as usize),
            one_len: one.len(),
        }
    }
}
