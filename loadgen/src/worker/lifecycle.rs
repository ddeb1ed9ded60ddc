//! Connection lifecycle for a worker: connect, established, failures with back-off,
//! closing and reopening, timeouts, and the final tally of what is still in flight.

use super::Worker;
use super::conn::State;
use crate::recorder::ErrorKind;
use crate::sys::clock::now_ns;
use crate::sys::socket;

/// Connects started per loop pass; the loop handles I/O and checks the clock in between.
const CONNECTS_PER_PASS: u32 = 256;

impl Worker {
    /// Open a socket for slot `ci`. `with_batch`: closed loop issues a batch now, written as
    /// soon as the connection is up (so its latency includes the handshake).
    pub(super) fn start_connect(&mut self, ci: usize, now: u64, with_batch: bool) {
        self.cc.requested += 1;
        let c = &mut self.conns[ci];
        c.reset_socket();
        c.generation = c.generation.wrapping_add(1);
        c.connect_started_ns = now;
        match socket::connect(&self.plan.addr) {
            Ok(socket::Connect::Started(fd)) => {
                if self.harvest && socket::enable_rx_timestamps(fd).is_err() {
                    self.harvest = false;
                }
                c.fd = fd;
                c.state = State::Connecting;
                self.connecting_count += 1;
                if let Err(_e) = self.watch_connect(ci) {
                    self.connect_failed(ci, now);
                    return;
                }
                if with_batch {
                    self.issue_closed(ci, now);
                }
            }
            Ok(socket::Connect::Failed) | Err(_) => {
                c.state = State::Connecting;
                self.connecting_count += 1;
                if with_batch {
                    // The batch is issued and then lost to the failed connect.
                    self.issue_closed(ci, now);
                }
                self.connect_failed(ci, now);
            }
        }
    }

    pub(super) fn on_established(&mut self, ci: usize) {
        let setup_us = now_ns().saturating_sub(self.conns[ci].connect_started_ns) / 1_000;
        self.setup.saturating_record(setup_us.max(1));
        self.cc.established += 1;
        self.connecting_count -= 1;
        self.open_count += 1;
        let c = &mut self.conns[ci];
        if c.ever_open {
            self.cc.reconnected += 1;
        }
        c.ever_open = true;
        c.connect_failures = 0;
        c.state = State::Open;
        if c.wlen > c.written {
            // A batch issued with the connect, or h2c's preface.
            self.flush(ci);
        }
        let c = &self.conns[ci];
        if c.state == State::Open && c.in_flight == 0 {
            if self.plan.open.is_some() {
                self.mark_free(ci);
            } else if self.started {
                // Closed loop, connected after the start line (slow pre-connect): start working.
                self.issue_closed(ci, now_ns());
            }
        }
    }

    pub(super) fn connect_failed(&mut self, ci: usize, now: u64) {
        self.cc.failed += 1;
        self.connecting_count -= 1;
        let c = &mut self.conns[ci];
        c.connect_failures += 1;
        let backoff_ns = (10_000_000u64 << (c.connect_failures - 1).min(6)).min(500_000_000);
        self.drop_requests(ci, ErrorKind::Connect, now);
        let c = &mut self.conns[ci];
        c.reset_socket();
        c.state = State::Down {
            retry_at_ns: now + backoff_ns,
        };
        self.down.push(ci);
    }

    /// Count a connection's in-flight requests as failed with `kind`.
    pub(super) fn drop_requests(&mut self, ci: usize, kind: ErrorKind, now: u64) {
        let c = &mut self.conns[ci];
        let (n, counted) = (c.in_flight as u64, c.in_flight_counted as u64);
        c.in_flight = 0;
        c.in_flight_counted = 0;
        self.in_flight_total -= n;
        if counted > 0 {
            self.rec.error(kind, counted, now);
        }
    }

    /// Close an established connection; reconnect right away (no back-off: it worked).
    pub(super) fn close_open(&mut self, ci: usize, now: u64) {
        let c = &mut self.conns[ci];
        if c.state == State::Open {
            self.open_count -= 1;
        } else if c.state == State::Connecting {
            self.connecting_count -= 1;
        }
        c.reset_socket();
        c.state = State::Down { retry_at_ns: now };
        self.down.push(ci);
    }

    pub(super) fn fail_open(&mut self, ci: usize, kind: ErrorKind, now: u64) {
        self.drop_requests(ci, kind, now);
        self.close_open(ci, now);
    }

    /// Reconnect slots whose back-off expired, at most `CONNECTS_PER_PASS` per call (so a
    /// pass over thousands of slots cannot overrun the window); returns the next retry time.
    pub(super) fn reconnect_due(&mut self, now: u64) -> u64 {
        let mut next = u64::MAX;
        let mut started = 0;
        let mut i = 0;
        while i < self.down.len() {
            if started == CONNECTS_PER_PASS {
                return now;
            }
            let ci = self.down[i];
            match self.conns[ci].state {
                State::Down { retry_at_ns } if retry_at_ns <= now => {
                    self.down.swap_remove(i);
                    let closed = self.plan.open.is_none();
                    if closed && self.batch_size(now, 0) == 0 {
                        self.conns[ci].state = State::Parked;
                        continue;
                    }
                    self.start_connect(ci, now, closed);
                    started += 1;
                }
                State::Down { retry_at_ns } => {
                    next = next.min(retry_at_ns);
                    i += 1;
                }
                _ => {
                    self.down.swap_remove(i);
                }
            }
        }
        next
    }

    pub(super) fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.plan.timeout_ns;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            let (state, n, counted) = (c.state, c.in_flight as u64, c.in_flight_counted as u64);
            // h2c: since the connection's latest stream (its streams are not timed one by one).
            let (sent_ns, connect_ns) = (c.sent_ns, c.connect_started_ns);
            match state {
                State::Open | State::Connecting if n > 0 && now - sent_ns >= timeout => {
                    if counted > 0 {
                        self.rec.timeout(counted, now);
                    }
                    self.conns[ci].in_flight = 0;
                    self.conns[ci].in_flight_counted = 0;
                    self.in_flight_total -= n;
                    if state == State::Connecting {
                        self.cc.failed += 1;
                    }
                    // HTTP/1.1 framing is lost once a response is abandoned: reopen.
                    self.close_open(ci, now);
                }
                State::Connecting if now - connect_ns >= timeout => {
                    self.connect_failed(ci, now);
                }
                _ => {}
            }
        }
    }

    pub(super) fn close_all(&mut self, now: u64) {
        let mut in_flight = 0;
        for c in &mut self.conns {
            in_flight += c.in_flight_counted as u64;
            c.reset_socket();
        }
        self.rec.counts.in_flight_at_end = in_flight;
        self.ring_drain();
        if self.plan.open.is_some() {
            // Everything due before the end but never sent is backlog, not silently lost.
            self.count_backlog(now);
        }
    }
}
