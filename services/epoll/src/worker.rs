//! One worker: a pinned OS thread running an edge-triggered epoll loop over its own
//! SO_REUSEPORT listener and its connections, with a timer heap for `/sleep`.
//!
//! Every connection is registered once for `IN | OUT | RDHUP`, edge-triggered, and never
//! modified. On an event the connection is *driven*: answer what is buffered, write, read, until
//! the socket has nothing more to read (or a write would block, or a `/sleep` is pending). A
//! read shorter than the free buffer means the socket was drained, so the next edge will come;
//! only after a hang-up is a read repeated until it returns 0.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use ping_common::MAX_HEAD_BYTES;

use crate::sys::{self, Epoll, Event};
use ping_common::http1::{Next, Session};

const READ_CHUNK: usize = 8 * 1024;
const EVENTS: usize = 256;
/// Token of the listener; connections use their slot index.
const LISTENER: u64 = u64::MAX;
/// Back-off before accepting again after an accept error (e.g. out of fds).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(5);

struct Conn {
    fd: OwnedFd,
    input: Vec<u8>,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    written: usize,
    /// The current response write's `--split-write-every` cut, once decided.
    cut: Option<Option<usize>>,
    http: Session,
}

/// What driving a connection ended with.
enum Drive {
    Open,
    Close,
}

struct Worker {
    epoll: Epoll,
    listener: socket2::Socket,
    conns: Vec<Option<Conn>>,
    /// Generation of each slot, bumped on close, so a stale timer cannot wake a new connection.
    generations: Vec<u32>,
    free: Vec<usize>,
    /// `/sleep` wake-ups: (deadline, slot, generation).
    timers: BinaryHeap<Reverse<(Instant, usize, u32)>>,
    accept_again_at: Option<Instant>,
}

/// Runs a worker forever; reports start-up success (or the error) on `ready` once bound.
pub fn run(listen: SocketAddr, cpu: Option<usize>, ready: ping_common::per_core::Ready<()>) {
    let worker = (|| -> Result<Worker, String> {
        if let Some(cpu) = cpu {
            ping_common::per_core::pin_current_thread(cpu)?;
        }
        let listener = sys::reuseport_listener(listen)
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let epoll = Epoll::new().map_err(|e| format!("epoll_create1: {e}"))?;
        epoll
            .add(listener.as_raw_fd(), sys::IN | sys::ET, LISTENER)
            .map_err(|e| format!("epoll_ctl(listener): {e}"))?;
        Ok(Worker {
            epoll,
            listener,
            conns: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            accept_again_at: None,
        })
    })();
    match worker {
        Ok(mut w) => {
            ready.serving(());
            w.event_loop();
        }
        Err(e) => {
            ready.failed(e);
        }
    }
}

impl Worker {
    fn event_loop(&mut self) {
        let mut events: Vec<Event> = vec![Event { events: 0, u64: 0 }; EVENTS];
        loop {
            let n = match self.epoll.wait(&mut events, self.timeout_ms()) {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => 0,
                // EBADF/EINVAL cannot happen on our own epoll fd; give up this worker if so.
                Err(_) => return,
            };
            for ev in &events[..n] {
                // Copies: epoll_event is packed on x86_64.
                let (token, flags) = (ev.u64, ev.events);
                if token == LISTENER {
                    self.accept_all();
                } else {
                    self.drive(token as usize, flags);
                }
            }
            self.fire_timers();
        }
    }

    /// Milliseconds until the next timer (rounded up), or -1 without timers.
    fn timeout_ms(&self) -> i32 {
        let next = self.timers.peek().map(|Reverse((t, _, _))| *t);
        let next = match (next, self.accept_again_at) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => return -1,
            },
        };
        let left = next.saturating_duration_since(Instant::now());
        left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
    }

    fn fire_timers(&mut self) {
        if self.timers.is_empty() && self.accept_again_at.is_none() {
            return;
        }
        let now = Instant::now();
        if self.accept_again_at.is_some_and(|t| t <= now) {
            self.accept_again_at = None;
            self.accept_all();
        }
        while let Some(&Reverse((deadline, slot, generation))) = self.timers.peek() {
            if deadline > now {
                break;
            }
            self.timers.pop();
            if self.generations[slot] != generation {
                continue;
            }
            if let Some(conn) = self.conns[slot].as_mut() {
                conn.http.wake(&mut conn.out);
                // Continue with what was read meanwhile; a read that finds nothing is harmless.
                self.drive(slot, 0);
            }
        }
    }

    fn accept_all(&mut self) {
        loop {
            match sys::accept(self.listener.as_raw_fd()) {
                Ok(fd) => self.register(fd),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                    ) => {}
                // Out of fds (or memory): the edge is consumed, so retry on a timer instead.
                Err(_) => {
                    self.accept_again_at = Some(Instant::now() + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
    }

    fn register(&mut self, fd: OwnedFd) {
        let _ = sys::set_nodelay(fd.as_raw_fd());
        let slot = self.free.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.generations.push(0);
            self.conns.len() - 1
        });
        let events = sys::IN | sys::OUT | sys::RDHUP | sys::ET;
        if self.epoll.add(fd.as_raw_fd(), events, slot as u64).is_err() {
            self.free.push(slot);
            return; // dropping fd closes it
        }
        self.conns[slot] = Some(Conn {
            fd,
            input: Vec::with_capacity(READ_CHUNK),
            out: Vec::with_capacity(READ_CHUNK),
            written: 0,
            cut: None,
            http: Session::new(crate::SERVICE),
        });
        // Data may already be there; with edge triggering the first event reports it anyway.
    }

    fn drive(&mut self, slot: usize, flags: u32) {
        let Some(conn) = self.conns.get_mut(slot).and_then(Option::as_mut) else {
            return;
        };
        let hung_up = flags & (sys::RDHUP | sys::HUP_OR_ERR) != 0;
        let (outcome, sleep) = conn.drive(hung_up);
        if let Some(ms) = sleep {
            let generation = self.generations[slot];
            let deadline = Instant::now() + Duration::from_millis(ms);
            self.timers.push(Reverse((deadline, slot, generation)));
        }
        if let Drive::Close = outcome {
            // Dropping the fd closes it, which also removes it from the epoll set.
            self.conns[slot] = None;
            self.generations[slot] = self.generations[slot].wrapping_add(1);
            self.free.push(slot);
        }
    }
}

impl Conn {
    /// Answers, writes and reads until the socket is drained, a write would block or a sleep
    /// is pending; returns whether to keep the connection, and a sleep to arm.
    fn drive(&mut self, hung_up: bool) -> (Drive, Option<u64>) {
        let mut sleep = None;
        loop {
            if let Next::Sleep(ms) = self.http.process(&mut self.input, &mut self.out) {
                sleep = Some(ms);
            }
            match self.flush() {
                Ok(true) => {}
                Ok(false) => return (Drive::Open, sleep), // EPOLLOUT edge will resume us
                Err(_) => return (Drive::Close, sleep),
            }
            if self.http.close_after {
                sys::shutdown_write(self.fd.as_raw_fd());
                return (Drive::Close, sleep);
            }
            // While a sleep holds later pipelined requests, buffer a bounded amount only.
            if self.http.sleeping.is_some() && self.input.len() > MAX_HEAD_BYTES {
                return (Drive::Open, sleep);
            }
            if self.input.capacity() - self.input.len() < READ_CHUNK / 2 {
                self.input.reserve(READ_CHUNK);
            }
            let room = self.input.capacity() - self.input.len();
            match sys::read_into(self.fd.as_raw_fd(), &mut self.input) {
                // The client's FIN: every complete request before it was answered above, except
                // behind a pending `/sleep`, whose timer drives us on (and reads this EOF again).
                Ok(0) if self.http.sleeping.is_some() => return (Drive::Open, sleep),
                Ok(0) => return (Drive::Close, sleep),
                // Short read: the socket is drained, a new edge comes with new data (or FIN).
                Ok(n) if n < room && !hung_up => {
                    if let Next::Sleep(ms) = self.http.process(&mut self.input, &mut self.out) {
                        sleep = Some(ms);
                    }
                    return match self.flush() {
                        Ok(true) if self.http.close_after => {
                            sys::shutdown_write(self.fd.as_raw_fd());
                            (Drive::Close, sleep)
                        }
                        Ok(_) => (Drive::Open, sleep),
                        Err(_) => (Drive::Close, sleep),
                    };
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return (Drive::Open, sleep),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return (Drive::Close, sleep),
            }
        }
    }

    /// Writes pending output; `Ok(true)` when all of it is written.
    fn flush(&mut self) -> io::Result<bool> {
        // `--split-write-every`: decided once per response write, not per retry.
        if self.cut.is_none() && self.written < self.out.len() {
            self.cut = Some(ping_common::split::cut(self.out.len()));
        }
        while self.written < self.out.len() {
            let end = match self.cut {
                Some(Some(k)) if self.written < k => k,
                _ => self.out.len(),
            };
            match sys::write(self.fd.as_raw_fd(), &self.out[self.written..end]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.written = 0;
        self.cut = None;
        Ok(true)
    }
}
