//! Socket I/O for a worker: writing request batches, reading and framing responses, and
//! what a completed response triggers next. The framing and accounting (`received` on) are
//! shared by both backends; `flush` and `read_ready` are epoll's way of moving the bytes.

use std::io;

use super::Worker;
use super::conn::State;
use crate::http::response::{Response, Sent, Step};
use crate::recorder::ErrorKind;
use crate::sys::clock::{now_ns, real_to_mono};
use crate::sys::socket;

impl Worker {
    pub(super) fn flush(&mut self, ci: usize) {
        if self.io.is_uring() {
            self.ring_arm_send(ci);
            return;
        }
        if self.conns[ci].tls.is_some() {
            self.tls_flush(ci);
            return;
        }
        let c = &mut self.conns[ci];
        while c.written < c.wlen {
            match socket::send(c.fd, &c.wbuf(&self.plan.req)[c.written..c.wlen]) {
                Ok(n) => {
                    c.written += n;
                    if c.counted {
                        self.rec.bytes_written += n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_open(ci, failure(&e, ErrorKind::Write), now_ns());
                    return;
                }
            }
        }
        c.written_all();
    }

    /// Read and frame everything available. `peer_closed`: the event reported the peer's
    /// FIN/HUP, so a short read does not mean drained — read on until EOF is seen (a body
    /// delimited by the close completes only then).
    pub(super) fn read_ready(&mut self, ci: usize, peer_closed: bool) {
        if self.conns[ci].tls.is_some() {
            self.tls_read(ci);
            return;
        }
        let harvest = self.harvest;
        loop {
            if !self.make_room(ci) {
                return;
            }
            let c = &mut self.conns[ci];
            let space = c.rbuf.len() - c.rend;
            let got = if harvest {
                socket::read_stamped(c.fd, &mut c.rbuf[c.rend..])
            } else {
                socket::read(c.fd, &mut c.rbuf[c.rend..]).map(|n| (n, None))
            };
            match got {
                Ok((0, _)) => {
                    self.on_eof(ci, now_ns());
                    return;
                }
                Ok((n, stamp)) => {
                    if !self.received(ci, n, stamp) || (n < space && !peer_closed) {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail_open(ci, failure(&e, ErrorKind::Read), now_ns());
                    return;
                }
            }
        }
    }

    /// Make room at the end of slot `ci`'s read buffer; false (and the connection failed)
    /// if a response head fills the whole buffer.
    pub(super) fn make_room(&mut self, ci: usize) -> bool {
        let c = &mut self.conns[ci];
        if c.rend == c.rbuf.len() {
            if c.rstart > 0 {
                c.compact();
            } else {
                self.fail_open(ci, ErrorKind::Parse, now_ns());
                return false;
            }
        }
        true
    }

    /// `n` bytes arrived at the end of slot `ci`'s buffer (kernel receive time `stamp`, if
    /// read with one): count and frame them. Returns false when reading must stop (the
    /// connection closed, or the window is over).
    pub(super) fn received(&mut self, ci: usize, n: usize, stamp: Option<u64>) -> bool {
        // One timestamp per read: every response completed by these bytes arrived together.
        // Harvesting reads long after arrival, so it takes the kernel's receive time; without
        // one it must stop harvesting.
        let now = match stamp {
            Some(real) => real_to_mono(real),
            None => {
                self.harvest = false;
                now_ns()
            }
        };
        if now >= self.end_ns {
            // Past the window: leave these as in flight at the end.
            self.stop = true;
            return false;
        }
        let c = &mut self.conns[ci];
        c.rend += n;
        if c.counted {
            self.rec.bytes_read += n as u64;
        }
        let open = self.parse(ci, now);
        // h2c: what the framer answers (SETTINGS and PING acknowledged, the window topped up).
        if open && self.conns[ci].take_control() {
            self.flush(ci);
        }
        open
    }

    /// Parse every complete response in the buffer. Returns false if the connection closed.
    /// The next request goes out only once the buffer is drained: bytes that arrived
    /// together with the last answer can be no answer to a request sent after them.
    pub(super) fn parse(&mut self, ci: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[ci];
            if c.rstart == c.rend {
                c.compact();
                // h2c's closed loop sends a stream for each one answered (and HTTP/1.1 a
                // batch once all are).
                let refill = c.h2.is_some() && self.plan.open.is_none();
                if c.in_flight == 0 || (refill && c.in_flight < self.plan.pipeline) {
                    return self.next_request(ci, now);
                }
                return true;
            }
            if c.in_flight == 0 && c.h2.is_none() {
                // Bytes nobody asked for: framing can no longer be trusted (h2c's framer
                // takes frames on no stream, and fails any on a stream not in flight).
                self.unsolicited += 1;
                self.close_open(ci, now);
                return false;
            }
            let step = match &mut c.h2 {
                Some(s) => s.feed(&c.rbuf[c.rstart..c.rend]),
                None => c.parser.feed(&c.rbuf[c.rstart..c.rend]),
            };
            match step {
                Step::Done { consumed, response } => {
                    c.rstart += consumed;
                    if !self.on_response(ci, response, now) {
                        return false;
                    }
                }
                Step::More { consumed } => {
                    c.rstart += consumed;
                    // Drained: start over at the front. Past half: make room for the rest.
                    if c.rstart == c.rend || c.rstart > c.rbuf.len() / 2 {
                        c.compact();
                    }
                    return true;
                }
                Step::Error(_) => {
                    self.fail_open(ci, ErrorKind::Parse, now);
                    return false;
                }
            }
        }
    }

    pub(super) fn on_eof(&mut self, ci: usize, now: u64) {
        if let Some(r) = self.conns[ci].parser.on_eof()
            && self.conns[ci].in_flight > 0
        {
            self.on_response(ci, r, now);
            return;
        }
        if self.conns[ci].in_flight > 0 {
            self.fail_open(ci, ErrorKind::Read, now);
        } else {
            // Server closed an idle keep-alive connection.
            self.close_open(ci, now);
        }
    }

    /// Record one response; returns false if the connection was closed.
    pub(super) fn on_response(&mut self, ci: usize, r: Response, now: u64) -> bool {
        let c = &mut self.conns[ci];
        c.in_flight -= 1;
        self.in_flight_total -= 1;
        // h2c's streams carry their own send time; HTTP/1.1's batch shares the connection's.
        let sent = r.stream.unwrap_or(Sent {
            at_ns: c.sent_ns,
            counted: c.in_flight_counted > 0,
        });
        // Closed loop: a request was intended when it was sent.
        let intended = match (r.stream, self.plan.open) {
            (Some(s), None) => s.at_ns,
            _ => c.intended_ns,
        };
        if sent.counted {
            c.in_flight_counted -= 1;
            self.rec.response(&r, now, sent.at_ns, intended);
        }
        if c.in_flight > 0 {
            if r.close {
                // Server closes with pipelined requests unanswered.
                self.fail_open(ci, ErrorKind::Read, now);
                return false;
            }
            return true;
        }
        if r.close || !self.plan.keepalive {
            self.close_open(ci, now);
            return false;
        }
        true
    }

    /// An open connection with nothing in flight: the closed loop issues its next batch,
    /// the open loop offers it to the dispatcher. Returns false if it is no longer open.
    fn next_request(&mut self, ci: usize, now: u64) -> bool {
        if self.conns[ci].state != State::Open {
            return false;
        }
        if self.plan.open.is_some() {
            self.mark_free(ci);
        } else {
            self.issue_closed(ci, now);
        }
        self.conns[ci].state == State::Open
    }
}

/// A reset peer is its own error class; any other I/O error counts as `otherwise`.
pub(super) fn failure(e: &io::Error, otherwise: ErrorKind) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::ECONNRESET) | Some(libc::EPIPE) => ErrorKind::Reset,
        _ => otherwise,
    }
}
