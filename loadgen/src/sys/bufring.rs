//! A ring of provided buffers (IORING_REGISTER_PBUF_RING, 5.19+) for multishot receives:
//! the kernel picks a free buffer for each chunk it receives and names it in the completion;
//! we copy the chunk out (into the connection's own read buffer, where framing works as for
//! every other read) and hand the buffer straight back. One receive then stays armed per
//! connection for its whole life, instead of one receive (and one poll arm) per response.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::IoUring;
use io_uring::types::BufRingEntry;

pub struct BufRing {
    /// The ring of buffer descriptors the kernel reads (page-aligned, mmap'd; the kernel pins
    /// its pages while registered).
    entries: NonNull<BufRingEntry>,
    entries_len: usize,
    count: u16,
    /// Our producer index (the kernel reads it from the first entry's `resv`).
    tail: u16,
    buf_len: u32,
    data: Box<[u8]>,
    pub group: u16,
}

impl BufRing {
    /// `count` (a power of two ≤ 32768) buffers of `buf_len` bytes, registered on `ring` as
    /// buffer group `group`, all free.
    pub fn new(ring: &IoUring, count: u16, buf_len: u32, group: u16) -> io::Result<Self> {
        assert!(count.is_power_of_two() && count <= 1 << 15);
        let entries_len = count as usize * std::mem::size_of::<BufRingEntry>();
        // SAFETY: an anonymous private mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                entries_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        super::count::add(1);
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut me = Self {
            entries: NonNull::new(p.cast()).expect("mmap returned null"),
            entries_len,
            count,
            tail: 0,
            buf_len,
            data: vec![0; count as usize * buf_len as usize].into_boxed_slice(),
            group,
        };
        // SAFETY: the descriptor ring is page-aligned, `count` entries long, and lives (with
        // the data it points at) until after the ring is dropped (`Ring` field order).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                me.entries.as_ptr() as u64,
                count,
                group,
                0,
            )?;
        }
        super::count::add(1);
        for bid in 0..count {
            me.give_back(bid);
        }
        Ok(me)
    }

    /// The first `len` bytes of buffer `bid` (as a completion reported them).
    pub fn chunk(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * self.buf_len as usize;
        &self.data[start..start + len.min(self.buf_len as usize)]
    }

    /// Return buffer `bid` to the kernel.
    pub fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (self.count - 1)) as usize;
        let addr = self.data.as_ptr() as u64 + bid as u64 * self.buf_len as u64;
        // SAFETY: `slot` < `count`; the entry at the tail is ours until the tail passes it.
        unsafe {
            let e = &mut *self.entries.as_ptr().add(slot);
            e.set_addr(addr);
            e.set_len(self.buf_len);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
        // SAFETY: the tail shares the first entry's `resv`, which the kernel reads only
        // through this atomic publication (release: the entry is written first).
        unsafe {
            let tail = BufRingEntry::tail(self.entries.as_ptr()) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: our own mapping; the ring that registered it is gone (`Ring` drops it
        // first), and the kernel holds its own pin on the pages until it lets go.
        unsafe { libc::munmap(self.entries.as_ptr().cast(), self.entries_len) };
    }
}

#[cfg(test)]
mod tests {
    use crate::sys::uring::{Completion, Ring};

    /// A connected stream socket pair (io_uring receives need no O_NONBLOCK).
    fn pair() -> (i32, i32) {
        let mut fds = [0; 2];
        // SAFETY: a valid array of two fds.
        let rc = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) };
        assert_eq!(rc, 0);
        (fds[0], fds[1])
    }

    fn wait(ring: &mut Ring, out: &mut Vec<Completion>) {
        for _ in 0..100 {
            ring.submit_and_wait(10_000_000, out).unwrap();
            if !out.is_empty() {
                return;
            }
        }
        panic!("no completion in 1 s");
    }

    #[test]
    fn a_multishot_receive_stays_armed_and_hands_every_chunk_over_in_a_buffer() {
        if !matches!(crate::sys::uring::probe(), Ok(Ok(()))) {
            return; // no multishot here: one-shot receives, tested by the integration suite
        }
        let mut ring = Ring::new(1, true).unwrap();
        let (a, b) = pair();
        ring.recv_multi(a, 7).unwrap();
        let mut out = Vec::new();
        let mut got = Vec::new();
        // More chunks than the ring has buffers (64): every one must be handed back to
        // keep the receive armed.
        for i in 0..200u32 {
            let msg = format!("chunk {i};");
            // SAFETY: writing a valid buffer to our own socket.
            let n = unsafe { libc::write(b, msg.as_ptr().cast(), msg.len()) };
            assert_eq!(n as usize, msg.len());
            wait(&mut ring, &mut out);
            for c in &out {
                assert_eq!(c.user_data, 7);
                assert!(c.more, "the receive ended: {c:?}");
                let bid = c.buf.expect("a provided buffer");
                got.extend_from_slice(ring.chunk(bid, c.result as usize));
                ring.give_back(bid);
            }
        }
        let want: String = (0..200).map(|i| format!("chunk {i};")).collect();
        assert_eq!(String::from_utf8(got).unwrap(), want);
        // The peer's close ends it: a last completion without `more`.
        // SAFETY: our own fds.
        unsafe { libc::close(b) };
        wait(&mut ring, &mut out);
        let last = out.last().unwrap();
        assert!(!last.more && last.result == 0, "{last:?}");
        assert_eq!(ring.outstanding(), 0);
        // SAFETY: our own fd.
        unsafe { libc::close(a) };
    }
}
