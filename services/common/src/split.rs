//! `--split-write-every N`: every N-th response write goes out as two writes, so two TCP
//! segments (TCP_NODELAY is set on every accepted socket; on loopback each write leaves at
//! once), where the service would have made one — the same bytes, one more send and one
//! more packet. A known amount of kernel work that a syscall count may not see: an io_uring
//! service submits one more send without one more syscall. It checks the counted kernel
//! events (packets and socket sends per request) and the gate that judges them, as
//! `--burn-syscalls` checks the syscall count.
//!
//! A response write is what the service hands the kernel after answering what it has read:
//! one response per write unless requests were pipelined (then several, cut as one). The
//! counter is shared by all workers, so the process splits exactly writes / N of them.

use std::sync::atomic::{AtomicU64, Ordering};

/// Largest `--split-write-every`: one split every 10^6 writes.
pub const MAX_SPLIT_WRITE_EVERY: u64 = 1_000_000;

/// Services whose HTTP library writes responses itself with no hook to split them
/// (actix-web, may_minihttp): they refuse a non-zero `--split-write-every` (exit 2).
pub const UNSUPPORTED: [&str; 2] = ["ping-actix-web", "ping-may-minihttp"];

static EVERY: AtomicU64 = AtomicU64::new(0);
static WRITES: AtomicU64 = AtomicU64::new(0);

/// Sets `--split-write-every` (0: never); [`crate::cli::run_service`] calls it before the
/// service starts.
pub fn set_every(every: u64) {
    EVERY.store(every, Ordering::Relaxed);
}

/// The `--split-write-every` in effect (the start-up line reports it when not 0).
pub fn every() -> u64 {
    EVERY.load(Ordering::Relaxed)
}

/// Call once per response write of `len` bytes, before writing: `Some(k)` when this write
/// is to go out as `[..k]` then `[k..]` (two writes), `None` to write it whole. The default,
/// 0, costs one relaxed load and a branch.
#[inline]
pub fn cut(len: usize) -> Option<usize> {
    let every = every();
    if every == 0 || len < 2 {
        return None;
    }
    (WRITES.fetch_add(1, Ordering::Relaxed) + 1)
        .is_multiple_of(every)
        .then_some(len / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nth_write_is_cut_in_two() {
        assert_eq!(cut(100), None, "default: never");
        set_every(3);
        let cuts: Vec<Option<usize>> = (0..6).map(|_| cut(100)).collect();
        assert_eq!(cuts, [None, None, Some(50), None, None, Some(50)]);
        assert_eq!(cut(1), None, "one byte cannot be two writes");
        set_every(0);
        assert_eq!(cut(100), None);
    }
}
