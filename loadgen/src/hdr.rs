//! The report's histogram fields both ways: HDR V2 + deflate, base64 — written by `run`,
//! read back by whoever re-merges reports (`hosts`, the runner's charts).

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// A merged histogram as HDR V2 + deflate, base64 (re-mergeable across runs and hosts).
pub fn hdr_v2_b64(h: &Histogram<u64>) -> Result<String, String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| format!("histogram serialization failed: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(&buf))
}

/// Decodes a report's histogram field (HDR V2 + deflate, base64).
pub fn hdr_v2_decode(b64: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("bad HDR histogram: {e:?}"))
}
