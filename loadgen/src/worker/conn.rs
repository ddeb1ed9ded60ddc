//! One client connection's state: socket, fixed read buffer, response framer, and the
//! requests it carries. Requests on a connection complete in order, so one send time and
//! a count describe a pipelined batch; no per-request storage.

use std::os::fd::RawFd;

use crate::http::h2::Session;
use crate::http::request::RequestBytes;
use crate::http::response::{ResponseParser, Sent};

/// Fixed read buffer per connection. Bodies are skipped, so it only has to hold one response
/// head; larger reads just mean fewer syscalls for large bodies.
pub const READ_BUF: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No socket; (re)connect at `retry_at_ns` (closed loop carries a batch when it does).
    Down {
        retry_at_ns: u64,
    },
    Connecting,
    Open,
    /// No socket and nothing more to do (closed-loop budget spent).
    Parked,
}

pub struct Conn {
    pub fd: RawFd,
    /// Bumped on every new socket so stale epoll events for a closed one are ignored.
    pub generation: u32,
    pub state: State,
    pub rbuf: Box<[u8]>,
    pub rstart: usize,
    pub rend: usize,
    pub parser: ResponseParser,
    /// h2c: the connection's HTTP/2 session — its framer, and the bytes it has to send, which
    /// `wlen` and `written` then count (`None`: HTTP/1.1).
    pub h2: Option<Box<Session>>,
    /// Over TLS: the session, from the end of the TCP connect on (while `Connecting`, its
    /// presence means the handshake is under way).
    pub tls: Option<Box<rustls::ClientConnection>>,
    /// Bytes of the request batch to write, and how many are written.
    pub wlen: usize,
    pub written: usize,
    /// Requests issued and not yet answered, and how many of them count (were issued inside
    /// the measured window): all or none of an HTTP/1.1 batch, h2c's stream by stream.
    pub in_flight: u32,
    pub in_flight_counted: u32,
    pub sent_ns: u64,
    /// Open loop: intended send time of the request in flight.
    pub intended_ns: u64,
    /// The requests in flight were issued inside the measured window.
    pub counted: bool,
    pub connect_started_ns: u64,
    /// Consecutive failed connects (for back-off).
    pub connect_failures: u32,
    /// Has this slot ever had an established connection (reconnect accounting).
    pub ever_open: bool,
    /// Sits in the worker's free list (open loop).
    pub in_free: bool,
    /// io_uring: operations queued on the current socket, and whether one of them is its
    /// receive or its send (at most one each).
    pub ops: u32,
    pub recv_armed: bool,
    pub send_armed: bool,
}

impl Conn {
    pub fn new() -> Self {
        Self {
            fd: -1,
            generation: 0,
            state: State::Down { retry_at_ns: 0 },
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            rstart: 0,
            rend: 0,
            parser: ResponseParser::new(),
            h2: None,
            tls: None,
            wlen: 0,
            written: 0,
            in_flight: 0,
            in_flight_counted: 0,
            sent_ns: 0,
            intended_ns: 0,
            counted: false,
            connect_started_ns: 0,
            connect_failures: 0,
            ever_open: false,
            in_free: false,
            ops: 0,
            recv_armed: false,
            send_armed: false,
        }
    }

    /// Issues `n` more requests, sent as `sent` says: counted in flight, and queued to write —
    /// HTTP/1.1's batch is the first `n` of `req.batch`, h2c's are new streams after whatever
    /// the session has still to send.
    pub fn issue(&mut self, n: u32, req: &RequestBytes, sent: Sent) {
        self.in_flight += n;
        if sent.counted {
            self.in_flight_counted += n;
        }
        self.counted = sent.counted;
        self.sent_ns = sent.at_ns;
        match (&mut self.h2, &req.h2_block) {
            (Some(s), Some(block)) => {
                // Past a connection's last stream id the requests are never sent: they time
                // out, and the connection is opened afresh.
                s.request(n, block, sent);
                self.wlen = s.out.len();
            }
            _ => {
                self.wlen = req.one_len * n as usize;
                self.written = 0;
            }
        }
    }

    /// The bytes `wlen` and `written` count: the h2c session's, or HTTP/1.1's batch.
    pub fn wbuf<'a>(&'a self, req: &'a RequestBytes) -> &'a [u8] {
        match &self.h2 {
            Some(s) => &s.out,
            None => &req.batch,
        }
    }

    /// Everything queued was written: an h2c session's buffer starts over.
    pub fn written_all(&mut self) {
        if let Some(s) = &mut self.h2 {
            s.out.clear();
            self.wlen = 0;
            self.written = 0;
        }
    }

    /// Over TLS: hands the bytes still to write (`written..wlen`) to the session, which
    /// encrypts them; returns how many.
    pub fn seal(&mut self, req: &RequestBytes) -> usize {
        let Conn {
            tls,
            h2,
            written,
            wlen,
            ..
        } = self;
        let Some(tls) = tls else { return 0 };
        let bytes = match h2 {
            Some(s) => &s.out[*written..*wlen],
            None => &req.batch[*written..*wlen],
        };
        // The session's plaintext buffer is unbounded (set when it is made): all is taken.
        let n = std::io::Write::write(&mut tls.writer(), bytes).unwrap_or(0);
        *written += n;
        n
    }

    /// Over TLS: the session has records to send.
    pub fn tls_pending(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.wants_write())
    }

    /// h2c: acknowledgements the framer queued beyond `wlen` are to be written too; true if
    /// there are any.
    pub fn take_control(&mut self) -> bool {
        match &self.h2 {
            Some(s) if s.out.len() > self.wlen => {
                self.wlen = s.out.len();
                true
            }
            _ => false,
        }
    }

    /// epoll/io_uring token: generation in the high half, slot index in the low half (io_uring
    /// adds the operation kind in bits 30-31; slots stay far below 2^30 by the fd limit).
    pub fn token(&self, index: usize) -> u64 {
        ((self.generation as u64) << 32) | index as u64
    }

    /// Move the unparsed bytes to the front of the read buffer.
    #[inline]
    pub fn compact(&mut self) {
        self.rbuf.copy_within(self.rstart..self.rend, 0);
        self.rend -= self.rstart;
        self.rstart = 0;
    }

    /// Drop the socket and all per-connection parse state. A socket the kernel still holds
    /// io_uring operations on is shut down first, which completes them (their completions
    /// carry the old generation and are dropped); a bare `close` would leave it open.
    pub fn reset_socket(&mut self) {
        if self.fd >= 0 {
            if self.ops > 0 {
                crate::sys::socket::shutdown(self.fd);
            }
            crate::sys::socket::close(self.fd);
            self.fd = -1;
        }
        self.tls = None;
        self.rstart = 0;
        self.rend = 0;
        self.parser.reset();
        self.wlen = 0;
        self.written = 0;
        if let Some(s) = &mut self.h2 {
            // A new connection opens with the preface.
            **s = Session::new();
            self.wlen = s.out.len();
        }
        self.ops = 0;
        self.recv_armed = false;
        self.send_armed = false;
    }
}
