//! io_uring for the closed loop's socket I/O: a ring per worker thread, one `io_uring_enter`
//! per loop pass that both submits every queued send/receive and waits for completions
//! (with a nanosecond timeout), and a probe that says whether this process may use io_uring
//! at all (`kernel.io_uring_disabled`, seccomp and container runtimes can refuse it) and
//! whether it has multishot receive and provided-buffer rings (6.10+ vouches for both).
//! Receives are multishot into a [`BufRing`] where the caller asks for that (the probe said
//! yes), else one-shot into the caller's buffer.
//!
//! The ring is set up `SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG` where the kernel has
//! them (6.1+): completions are then produced only inside our own `io_uring_enter`, in
//! batches, never by interrupting the thread, and a poll that has nothing to collect costs
//! no syscall at all (the kernel flags pending work in the shared ring).

use std::io;
use std::os::fd::RawFd;

use io_uring::types::{CancelBuilder, Fd, SubmitArgs, Timespec};
use io_uring::{IoUring, Probe, cqueue, opcode, squeue};

use super::bufring::BufRing;

/// One completion, copied out of the completion queue.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub user_data: u64,
    /// Bytes moved, or a negated errno.
    pub result: i32,
    /// A multishot operation that stays armed after this completion.
    pub more: bool,
    /// The provided buffer holding a multishot receive's bytes (give it back when done).
    pub buf: Option<u16>,
}

/// `sqe->ioprio` flag of send/recv (include/uapi/linux/io_uring.h, 5.19+; older kernels
/// ignore it).
const IORING_RECVSEND_POLL_FIRST: u16 = 1;

/// `user_data` of `cancel_all`'s own operation (no socket token is all ones).
const CANCEL_TOKEN: u64 = u64::MAX;

pub struct Ring {
    ring: IoUring,
    /// Operations submitted or queued whose completion has not been collected yet.
    outstanding: u64,
    /// Provided buffers for multishot receives, where the kernel has both. After `ring`:
    /// fields drop in order, so the kernel lets go of the buffers before they are freed.
    bufs: Option<BufRing>,
}

/// Provided buffers per ring: enough for every connection to have a few chunks in one pass
/// (each is handed back in the pass that received it); a multishot receive that finds none
/// ends with ENOBUFS and is re-armed.
const BUFS_PER_CONN: usize = 4;
/// One provided buffer: a pipelined batch of small responses fits in one.
const BUF_LEN: u32 = 4096;

/// Whether io_uring can run here, with the operations the closed loop needs (`Err` says why
/// not, in words for the report), and if so whether receives can be multishot into provided
/// buffers (`Ok(Err)` says why not).
pub fn probe() -> Result<Result<(), String>, String> {
    let ring = IoUring::new(8).map_err(|e| {
        let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
            .map(|v| format!("; sysctl kernel.io_uring_disabled = {}", v.trim()))
            .unwrap_or_default();
        format!("io_uring_setup failed: {e}{sysctl}")
    })?;
    super::count::add(1);
    if !ring.params().is_feature_ext_arg() {
        return Err("the kernel's io_uring has no timed wait (IORING_FEAT_EXT_ARG, 5.11+)".into());
    }
    let mut p = Probe::new();
    ring.submitter()
        .register_probe(&mut p)
        .map_err(|e| format!("io_uring opcode probe failed: {e}"))?;
    super::count::add(1);
    for (code, name) in [
        (opcode::Send::CODE, "send"),
        (opcode::Recv::CODE, "recv"),
        (opcode::PollAdd::CODE, "poll_add"),
        (opcode::AsyncCancel2::CODE, "async_cancel"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("the kernel's io_uring lacks the {name} operation"));
        }
    }
    // Multishot receive is 6.0+, provided-buffer rings 5.19+; the bundle feature (6.10) is
    // the flag that vouches for both. Registering a small ring proves the rest.
    if !ring.params().is_feature_recvsend_bundle() {
        return Ok(Err(
            "the kernel has no multishot receive into provided-buffer rings (6.10+)".into(),
        ));
    }
    let bufs = BufRing::new(&ring, 64, BUF_LEN, 0);
    // The ring goes first: a `BufRing` is freed only once no ring holds it.
    drop(ring);
    Ok(bufs
        .map(drop)
        .map_err(|e| format!("registering a provided-buffer ring failed: {e}")))
}

impl Ring {
    /// A ring for `connections` sockets (each has at most one receive, one send and one
    /// connect poll outstanding; a fuller queue is submitted early, not dropped), receiving
    /// multishot into provided buffers if `multishot` (which `probe` must have allowed).
    pub fn new(connections: usize, multishot: bool) -> io::Result<Self> {
        let entries = (connections * 2 + 16).clamp(64, 4096).next_power_of_two() as u32;
        let cq = entries * 4;
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_taskrun_flag()
            .setup_cqsize(cq)
            .build(entries)
            .or_else(|_| IoUring::builder().setup_cqsize(cq).build(entries))?;
        super::count::add(1);
        let bufs = if multishot {
            let count = (connections * BUFS_PER_CONN)
                .next_power_of_two()
                .clamp(64, 1 << 15) as u16;
            Some(BufRing::new(&ring, count, BUF_LEN, 0)?)
        } else {
            None
        };
        Ok(Self {
            ring,
            outstanding: 0,
            bufs,
        })
    }

    /// Operations still owned by the kernel (their buffers must stay alive).
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    fn push(&mut self, e: squeue::Entry) -> io::Result<()> {
        // SAFETY (for the caller's buffers): every push is from an `unsafe fn` whose contract
        // keeps the buffer alive until the completion is collected.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            // Queue full: hand what is queued to the kernel now.
            super::count::add(1);
            self.ring.submit()?;
        }
        self.outstanding += 1;
        Ok(())
    }

    /// Queue a send of `len` bytes at `buf` (MSG_NOSIGNAL: a closed peer is EPIPE, not a
    /// signal).
    ///
    /// # Safety
    /// `buf..buf+len` must stay valid until this operation's completion is collected.
    pub unsafe fn send(
        &mut self,
        fd: RawFd,
        buf: *const u8,
        len: usize,
        user_data: u64,
    ) -> io::Result<()> {
        let e = opcode::Send::new(Fd(fd), buf, len.min(u32::MAX as usize) as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data);
        self.push(e)
    }

    /// Queue a receive into `len` bytes at `buf`. `poll_first`: nothing can have arrived yet
    /// (the request it answers was just sent), so the kernel should wait for data before
    /// trying, instead of a receive that fails with EAGAIN and then waits.
    ///
    /// # Safety
    /// `buf..buf+len` must stay valid and unaliased until the completion is collected.
    pub unsafe fn recv(
        &mut self,
        fd: RawFd,
        buf: *mut u8,
        len: usize,
        poll_first: bool,
        user_data: u64,
    ) -> io::Result<()> {
        let e = opcode::Recv::new(Fd(fd), buf, len.min(u32::MAX as usize) as u32)
            .ioprio(if poll_first {
                IORING_RECVSEND_POLL_FIRST
            } else {
                0
            })
            .build()
            .user_data(user_data);
        self.push(e)
    }

    /// Whether receives are multishot into provided buffers (`recv_multi`).
    pub fn multishot(&self) -> bool {
        self.bufs.is_some()
    }

    /// Queue a multishot receive on `fd`: every chunk that arrives completes with `more` set
    /// and the provided buffer holding it, until the socket ends, fails or no buffer is free.
    pub fn recv_multi(&mut self, fd: RawFd, user_data: u64) -> io::Result<()> {
        let group = self.bufs.as_ref().expect("multishot ring").group;
        let e = opcode::RecvMulti::new(Fd(fd), group)
            .build()
            .user_data(user_data);
        self.push(e)
    }

    /// The bytes a multishot receive left in provided buffer `bid`.
    pub fn chunk(&self, bid: u16, len: usize) -> &[u8] {
        self.bufs.as_ref().expect("multishot ring").chunk(bid, len)
    }

    /// Hand provided buffer `bid` back to the kernel.
    pub fn give_back(&mut self, bid: u16) {
        if let Some(b) = &mut self.bufs {
            b.give_back(bid);
        }
    }

    /// The kernel did not give every operation back in time: never free the provided
    /// buffers it may still write into.
    pub fn leak_buffers(&mut self) {
        std::mem::forget(self.bufs.take());
    }

    /// Queue a one-shot wait for `fd` to become writable (a non-blocking connect finishing).
    pub fn poll_writable(&mut self, fd: RawFd, user_data: u64) -> io::Result<()> {
        let e = opcode::PollAdd::new(Fd(fd), libc::POLLOUT as u32)
            .build()
            .user_data(user_data);
        self.push(e)
    }

    /// Queue the cancellation of every outstanding operation (each then completes with
    /// `-ECANCELED` or its result). The cancel's own completion is not reported.
    pub fn cancel_all(&mut self) -> io::Result<()> {
        let e = opcode::AsyncCancel2::new(CancelBuilder::any())
            .build()
            .user_data(CANCEL_TOKEN);
        self.push(e)
    }

    /// Submit everything queued and wait up to `wait_ns` (0 = do not wait) for at least one
    /// completion; append what completed to `out`. One `io_uring_enter` at most, none when
    /// there is nothing to submit, nothing to wait for and no completion work pending.
    pub fn submit_and_wait(&mut self, wait_ns: u64, out: &mut Vec<Completion>) -> io::Result<()> {
        out.clear();
        let ready = !self.ring.completion().is_empty();
        let (queued, taskrun) = {
            let sq = self.ring.submission();
            (!sq.is_empty(), sq.taskrun() || sq.cq_overflow())
        };
        let want = usize::from(wait_ns > 0 && !ready);
        if queued || taskrun || want > 0 {
            let ts = Timespec::new()
                .sec(wait_ns / 1_000_000_000)
                .nsec((wait_ns % 1_000_000_000) as u32);
            let args = SubmitArgs::new().timespec(&ts);
            super::count::add(1);
            match self.ring.submitter().submit_with_args(want, &args) {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        for c in self.ring.completion() {
            if !cqueue::more(c.flags()) {
                self.outstanding = self.outstanding.saturating_sub(1);
            }
            if c.user_data() == CANCEL_TOKEN {
                continue;
            }
            out.push(Completion {
                user_data: c.user_data(),
                result: c.result(),
                more: cqueue::more(c.flags()),
                buf: cqueue::buffer_select(c.flags()),
            });
        }
        Ok(())
    }
}
