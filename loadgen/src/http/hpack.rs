//! The one thing a load generator needs from an HTTP/2 response's header block: its
//! `:status` (RFC 7541). The block is walked field by field and every field but `:status` is
//! skipped by its length, never decoded — a server's literal `content-length` or `date` on every
//! response costs a few comparisons. The dynamic table is kept by size only (what each entry
//! would take, so eviction matches the server's encoder), plus whether an entry is a
//! `:status` and which: only what is inserted, or a `:status` sent as a literal, is
//! Huffman-decoded, with the `loona-hpack` crate's decoder made once per connection.

use std::collections::VecDeque;

use loona_hpack::huffman::HuffmanDecoder;

/// The static table's names (RFC 7541 Appendix A), index 1 first: their lengths size the
/// dynamic table's entries.
const STATIC_NAMES: [&str; 61] = [
    ":authority",
    ":method",
    ":method",
    ":path",
    ":path",
    ":scheme",
    ":scheme",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    ":status",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "accept",
    "access-control-allow-origin",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-range",
    "content-type",
    "cookie",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "link",
    "location",
    "max-forwards",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "refresh",
    "retry-after",
    "server",
    "set-cookie",
    "strict-transport-security",
    "transfer-encoding",
    "user-agent",
    "vary",
    "via",
    "www-authenticate",
];
/// The static table's `:status` values, indices 8 to 14.
const STATIC_STATUS: [u16; 7] = [200, 204, 206, 304, 400, 404, 500];
/// The dynamic table's size until the server says otherwise (SETTINGS_HEADER_TABLE_SIZE,
/// which the client leaves at its default).
const DEFAULT_TABLE: usize = 4_096;

/// A dynamic-table entry as far as it matters here.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its name is `:status`; its value, if that is a number.
    status_name: bool,
    status: Option<u16>,
    name_len: usize,
    /// What it takes of the table (0 for a static entry).
    size: usize,
}

/// One connection's decoding state.
pub struct StatusDecoder {
    table: VecDeque<Entry>,
    size: usize,
    max: usize,
    huffman: Option<HuffmanDecoder>,
}

impl Default for StatusDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl StatusDecoder {
    pub fn new() -> Self {
        Self {
            table: VecDeque::new(),
            size: 0,
            max: DEFAULT_TABLE,
            huffman: None,
        }
    }

    /// The block's `:status`, if it has one (the first, if it has several).
    pub fn status(&mut self, mut b: &[u8]) -> Result<Option<u16>, &'static str> {
        let mut status = None;
        while let Some(&first) = b.first() {
            if first & 0x80 != 0 {
                let i = integer(&mut b, 7)?;
                let e = self.entry(i)?;
                if e.status_name {
                    status = status.or(e.status);
                }
            } else if first & 0xe0 == 0x20 {
                let max = integer(&mut b, 5)?;
                if max > DEFAULT_TABLE {
                    return Err("a table size update past the settings");
                }
                self.max = max;
                self.evict(0);
            } else {
                // 01: with incremental indexing (6-bit index); 0000 and 0001: without (4-bit).
                let indexed = first & 0xc0 == 0x40;
                let i = integer(&mut b, if indexed { 6 } else { 4 })?;
                // The name: whether it is `:status`, and its length.
                let (status_name, name_len) = if i == 0 {
                    let raw = string(&mut b)?;
                    let n = self.text(raw)?;
                    (n == b":status", n.len())
                } else {
                    let e = self.entry(i)?;
                    (e.status_name, e.name_len)
                };
                let raw = string(&mut b)?;
                let value = if status_name || indexed {
                    Some(self.text(raw)?)
                } else {
                    None
                };
                let parsed = value
                    .as_deref()
                    .filter(|_| status_name)
                    .and_then(parse_status);
                if status_name {
                    status = status.or(parsed);
                }
                if let (true, Some(v)) = (indexed, value) {
                    self.insert(Entry {
                        status_name,
                        status: parsed,
                        name_len,
                        size: name_len + v.len() + 32,
                    });
                }
            }
        }
        Ok(status)
    }

    /// Entry `i` of the whole table.
    fn entry(&self, i: usize) -> Result<Entry, &'static str> {
        match i {
            0 => Err("index 0"),
            1..=61 => Ok(Entry {
                status_name: (8..=14).contains(&i),
                status: STATIC_STATUS.get(i.wrapping_sub(8)).copied(),
                name_len: STATIC_NAMES[i - 1].len(),
                size: 0,
            }),
            _ => self
                .table
                .get(i - 62)
                .copied()
                .ok_or("an index past the table"),
        }
    }

    fn insert(&mut self, e: Entry) {
        self.evict(e.size);
        if e.size <= self.max {
            self.size += e.size;
            self.table.push_front(e);
        }
    }

    /// Evicts until `room` more fits.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            match self.table.pop_back() {
                Some(e) => self.size -= e.size,
                None => break,
            }
        }
    }

    /// A string's octets: Huffman-decoded if it is coded so.
    fn text(&mut self, (huffman, raw): (bool, &[u8])) -> Result<Vec<u8>, &'static str> {
        if !huffman {
            return Ok(raw.to_vec());
        }
        self.huffman
            .get_or_insert_with(HuffmanDecoder::new)
            .decode(raw)
            .map_err(|_| "a Huffman string that does not decode")
    }
}

fn parse_status(v: &[u8]) -> Option<u16> {
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// An integer with an `n`-bit prefix, advancing `b` past it.
fn integer(b: &mut &[u8], n: u32) -> Result<usize, &'static str> {
    let (&first, rest) = b.split_first().ok_or("a block that ends inside a field")?;
    *b = rest;
    let max = (1usize << n) - 1;
    let mut v = (first as usize) & max;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let (&byte, rest) = b
            .split_first()
            .ok_or("a block that ends inside an integer")?;
        *b = rest;
        if shift > 21 {
            return Err("an integer past 2^28");
        }
        v += ((byte & 0x7f) as usize) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
}

/// A string literal: (Huffman-coded, its octets), advancing `b` past it.
fn string<'a>(b: &mut &'a [u8]) -> Result<(bool, &'a [u8]), &'static str> {
    let huffman = b.first().is_some_and(|f| f & 0x80 != 0);
    let len = integer(b, 7)?;
    if len > b.len() {
        return Err("a string past the block");
    }
    let (s, rest) = b.split_at(len);
    *b = rest;
    Ok((huffman, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loona_hpack::{Decoder, Encoder};

    #[test]
    fn the_static_names_are_the_rfc_s() {
        // loona-hpack's decoder as the reference: each static index as an indexed field.
        let mut d = Decoder::new();
        for i in 1..=61u8 {
            let got = d.decode(&[0x80 | i]).unwrap();
            assert_eq!(
                got[0].0,
                STATIC_NAMES[i as usize - 1].as_bytes(),
                "index {i}"
            );
        }
    }

    /// The block a server sent (ping-tokio-hyper over h2c, hyper's encoder): the first
    /// response inserts `server`, `date` and `content-type`; later ones index them and send
    /// `content-length` as a Huffman literal without indexing.
    #[test]
    fn hyper_s_responses_give_their_status() {
        let first = hex(
            "88768cacd54cb24fd4c75a7f5596cf6196dc34fd2806d4be52282009c5000b8cb9702053168dff0f0d816b5f87497ca58ae819aa",
        );
        let later = hex("88c0bf0f0d816bbe");
        let mut s = StatusDecoder::new();
        assert_eq!(s.status(&first), Ok(Some(200)));
        assert_eq!(s.table.len(), 3);
        for _ in 0..3 {
            assert_eq!(s.status(&later), Ok(Some(200)));
        }
        // The reference decodes the same fields.
        let mut d = Decoder::new();
        d.decode(&first).unwrap();
        let fields = d.decode(&later).unwrap();
        assert_eq!(fields[0], (b":status".to_vec(), b"200".to_vec()));
        assert_eq!(fields.len(), 5);
    }

    #[test]
    fn statuses_indexed_literal_and_from_the_table_agree_with_the_reference() {
        let mut enc = Encoder::new();
        let mut s = StatusDecoder::new();
        for status in ["200", "201", "404", "418", "201", "503", "503"] {
            let headers = [
                (b":status".to_vec(), status.as_bytes().to_vec()),
                (
                    b"x-request".to_vec(),
                    format!("{status}-a-long-value").into_bytes(),
                ),
                (b"content-length".to_vec(), b"4".to_vec()),
            ];
            let block = enc.encode(headers.iter().map(|(k, v)| (&k[..], &v[..])));
            assert_eq!(
                s.status(&block),
                Ok(Some(status.parse().unwrap())),
                "{status}"
            );
        }
        // Literal forms, Huffman-coded or not, indexed or not.
        assert_eq!(s.status(&[0x08, 0x03, b'2', b'0', b'2']), Ok(Some(202)));
        assert_eq!(s.status(&[0x48, 0x03, b'2', b'0', b'3']), Ok(Some(203)));
        assert!(s.status(&[0x00, 0x07]).is_err());
        assert_eq!(s.status(&[0xbe + 0x40]), Err("an index past the table"));
    }

    #[test]
    fn eviction_follows_the_sizes() {
        let mut s = StatusDecoder::new();
        // A table of 100 bytes: an entry of 32 + 4 + 60 = 96 fits, a second evicts the first.
        s.status(&[0x3f, 0x45]).unwrap(); // size update to 31 + 69 = 100
        assert_eq!(s.max, 100);
        let mut field = vec![0x40, 0x04];
        field.extend_from_slice(b"x-ab");
        field.push(60);
        field.extend_from_slice(&[b'v'; 60]);
        s.status(&field).unwrap();
        s.status(&field).unwrap();
        assert_eq!((s.table.len(), s.size), (1, 96));
        assert!(s.status(&[0x3f, 0xe2, 0x1f]).is_err(), "past 4096");
        assert_eq!(s.status(&[0x3f, 0xe1, 0x1f]), Ok(None), "4096 itself");
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
