//! The io_uring backend of a worker: instead of waiting for readiness and then calling
//! `send`/`read`, each connection keeps one receive queued (into its own read buffer) and
//! queues a send when a batch is issued; one `io_uring_enter` per loop pass submits them all
//! and collects what completed. A completion feeds the same code the epoll path uses
//! (`Worker::received`, `on_eof`, `on_established`, `fail_open`), so accounting, framing,
//! timeouts and reconnects are identical; only the readiness/submission layer differs.
//!
//! A connection's queued operations carry its generation, so completions of a socket that
//! was closed meanwhile are recognised and dropped. A socket with operations still queued is
//! shut down before it is closed (`Conn::reset_socket`): otherwise the kernel's reference
//! would keep it open, and its receive pending, past `close`.

use std::io;

use super::Worker;
use super::conn::State;
use super::io::Io;
use super::wire::failure;
use crate::recorder::ErrorKind;
use crate::sys::clock::now_ns;
use crate::sys::socket;
use crate::sys::uring::{Completion, Ring};

/// Operation kinds, in bits 30-31 of a completion's token (the low 30 bits are the slot).
const OP_RECV: u64 = 1 << 30;
const OP_SEND: u64 = 2 << 30;
const OP_CONNECT: u64 = 3 << 30;
const OP_MASK: u64 = 3 << 30;
const SLOT_MASK: u64 = (1 << 30) - 1;
/// Longest wait for the kernel to give back every buffer at the end of a run.
const DRAIN_MAX_NS: u64 = 1_000_000_000;

impl Worker {
    fn ring(&mut self) -> &mut Ring {
        self.io.ring().expect("io_uring backend")
    }

    /// A connect was started on slot `ci`: wait for it to finish (socket writable).
    pub(super) fn ring_watch_connect(&mut self, ci: usize) -> io::Result<()> {
        let (fd, token) = (self.conns[ci].fd, self.conns[ci].token(ci));
        self.ring().poll_writable(fd, token | OP_CONNECT)?;
        self.conns[ci].ops += 1;
        Ok(())
    }

    /// Keep one receive queued on an open connection: a multishot one into provided buffers
    /// where the ring has them, else a one-shot receive into the free end of its buffer.
    pub(super) fn ring_arm_recv(&mut self, ci: usize) {
        let c = &self.conns[ci];
        if c.recv_armed || c.state != State::Open || c.fd < 0 {
            return;
        }
        let (fd, token) = (c.fd, c.token(ci));
        if self.ring().multishot() {
            match self.ring().recv_multi(fd, token | OP_RECV) {
                Ok(()) => {
                    let c = &mut self.conns[ci];
                    c.recv_armed = true;
                    c.ops += 1;
                }
                Err(e) => self.fail_open(ci, failure(&e, ErrorKind::Read), now_ns()),
            }
            return;
        }
        if !self.make_room(ci) {
            return;
        }
        let c = &mut self.conns[ci];
        let buf = c.rbuf[c.rend..].as_mut_ptr();
        let len = c.rbuf.len() - c.rend;
        // With a request just sent and nothing left over, the answer cannot be there yet.
        let poll_first = c.in_flight > 0;
        // SAFETY: the buffer belongs to the connection, which lives as long as the worker;
        // nothing touches `rbuf[rend..]` until this receive completes (only one is queued),
        // and `close_all` waits for the kernel to give every buffer back.
        let queued = unsafe {
            self.io
                .ring()
                .expect("ring")
                .recv(fd, buf, len, poll_first, token | OP_RECV)
        };
        match queued {
            Ok(()) => {
                c.recv_armed = true;
                c.ops += 1;
            }
            Err(e) => self.fail_open(ci, failure(&e, ErrorKind::Read), now_ns()),
        }
    }

    /// `n` bytes of a multishot receive in provided buffer `bid`: copy them into slot `ci`'s
    /// read buffer (as much as fits at a time) and frame them like any read. Returns false
    /// when reading must stop.
    fn ring_take_chunk(&mut self, ci: usize, bid: u16, n: usize) -> bool {
        let mut off = 0;
        while off < n {
            if !self.make_room(ci) {
                return false;
            }
            let Io::Uring(ring) = &self.io else {
                unreachable!("io_uring backend")
            };
            let c = &mut self.conns[ci];
            let k = (c.rbuf.len() - c.rend).min(n - off);
            c.rbuf[c.rend..c.rend + k].copy_from_slice(&ring.chunk(bid, n)[off..off + k]);
            off += k;
            if !self.received(ci, k, None) {
                return false;
            }
        }
        true
    }

    /// Queue the unwritten rest of slot `ci`'s batch (one send at a time per connection).
    pub(super) fn ring_arm_send(&mut self, ci: usize) {
        let c = &self.conns[ci];
        if c.send_armed || c.written >= c.wlen || c.fd < 0 {
            return;
        }
        let (fd, token) = (c.fd, c.token(ci));
        let rest = &self.plan.req.batch[c.written..c.wlen];
        let (buf, len) = (rest.as_ptr(), rest.len());
        // SAFETY: the request bytes live in the plan, which the worker holds (and
        // `close_all` outlives every queued operation).
        let queued = unsafe {
            self.io
                .ring()
                .expect("ring")
                .send(fd, buf, len, token | OP_SEND)
        };
        match queued {
            Ok(()) => {
                let c = &mut self.conns[ci];
                c.send_armed = true;
                c.ops += 1;
            }
            Err(e) => self.fail_open(ci, failure(&e, ErrorKind::Write), now_ns()),
        }
    }

    /// Submit what is queued, wait up to `wait_ns` for completions and handle them; returns
    /// how many completed.
    pub(super) fn ring_poll(&mut self, wait_ns: u64, asked_ns: u64) -> io::Result<usize> {
        let mut done = std::mem::take(&mut self.done);
        let r = self.ring().submit_and_wait(wait_ns, &mut done);
        if wait_ns > 0 {
            self.woke(asked_ns);
        }
        if r.is_ok() {
            for c in &done {
                self.on_completion(*c);
                if let Some(bid) = c.buf {
                    self.ring().give_back(bid);
                }
            }
        }
        let n = done.len();
        self.done = done;
        r.map(|()| n)
    }

    fn on_completion(&mut self, done: Completion) {
        let ci = (done.user_data & SLOT_MASK) as usize;
        let Some(c) = self.conns.get_mut(ci) else {
            return;
        };
        if c.generation != (done.user_data >> 32) as u32 || c.fd < 0 {
            // A socket closed since: its operations were shut down; nothing to count.
            return;
        }
        if !done.more {
            c.ops -= 1;
        }
        let res = done.result;
        match done.user_data & OP_MASK {
            OP_CONNECT => {
                if c.state != State::Connecting {
                    return;
                }
                match socket::take_error(c.fd) {
                    Ok(()) => {
                        self.on_established(ci);
                        self.ring_arm_recv(ci);
                    }
                    Err(_) => self.connect_failed(ci, now_ns()),
                }
            }
            OP_SEND => {
                c.send_armed = false;
                if res >= 0 {
                    c.written += res as usize;
                    if c.counted {
                        self.rec.bytes_written += res as u64;
                    }
                    self.ring_arm_send(ci);
                } else if retry(res) {
                    self.ring_arm_send(ci);
                } else {
                    let e = io::Error::from_raw_os_error(-res);
                    self.fail_open(ci, failure(&e, ErrorKind::Write), now_ns());
                }
            }
            _ => {
                if !done.more {
                    c.recv_armed = false;
                }
                if res == 0 {
                    self.on_eof(ci, now_ns());
                    return;
                }
                if res > 0 {
                    let going = match done.buf {
                        Some(bid) => self.ring_take_chunk(ci, bid, res as usize),
                        None => self.received(ci, res as usize, None),
                    };
                    if !going {
                        return;
                    }
                } else if !retry(res) && res != -libc::ENOBUFS {
                    // ENOBUFS: every provided buffer was taken in this pass; they are handed
                    // back before the re-armed receive reaches the kernel.
                    let e = io::Error::from_raw_os_error(-res);
                    self.fail_open(ci, failure(&e, ErrorKind::Read), now_ns());
                    return;
                }
                self.ring_arm_recv(ci);
            }
        }
    }

    /// At the end: every socket is closed (shut down where operations were queued); cancel
    /// what is left and wait until the kernel has given back every buffer. If it does not in
    /// time, the buffers are leaked rather than freed under the kernel.
    pub(super) fn ring_drain(&mut self) {
        let Some(ring) = self.io.ring() else { return };
        if ring.outstanding() == 0 || ring.cancel_all().is_err() {
            return;
        }
        let deadline = now_ns() + DRAIN_MAX_NS;
        let mut done = Vec::new();
        while ring.outstanding() > 0 && now_ns() < deadline {
            if ring.submit_and_wait(1_000_000, &mut done).is_err() {
                break;
            }
        }
        if ring.outstanding() > 0 {
            ring.leak_buffers();
            std::mem::forget(std::mem::take(&mut self.conns));
            std::mem::forget(self.plan.clone());
        }
    }
}

/// A result that asks for the same operation again.
fn retry(res: i32) -> bool {
    matches!(-res, libc::EAGAIN | libc::EINTR)
}
