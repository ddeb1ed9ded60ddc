//! Which I/O layer a worker's sockets run on, and the two calls whose work differs between
//! them: watching a connect, and waiting for (and handling) what the kernel reports.

use std::io;

use super::Worker;
use crate::report::IoBackend;
use crate::sys::epoll::Epoll;
use crate::sys::uring::Ring;

pub(super) enum Io {
    /// Readiness: edge-triggered epoll, then `send`/`read` (`Worker::on_event`).
    Epoll(Epoll),
    /// Completion: sends and receives queued on a ring (`worker::ring`). Boxed: the ring's
    /// queue handles are large, and the enum lives in every worker.
    Uring(Box<Ring>),
}

impl Io {
    pub(super) fn new(backend: IoBackend, connections: usize, multishot: bool) -> io::Result<Self> {
        Ok(match backend {
            IoBackend::Epoll => Io::Epoll(Epoll::new(connections.min(1024))?),
            IoBackend::Uring => Io::Uring(Box::new(Ring::new(connections, multishot)?)),
        })
    }

    pub(super) fn ring(&mut self) -> Option<&mut Ring> {
        match self {
            Io::Uring(r) => Some(r),
            Io::Epoll(_) => None,
        }
    }

    pub(super) fn is_uring(&self) -> bool {
        matches!(self, Io::Uring(_))
    }
}

impl Worker {
    /// A connect was started on slot `ci`: have its completion reported.
    pub(super) fn watch_connect(&mut self, ci: usize) -> io::Result<()> {
        match &self.io {
            Io::Epoll(ep) => ep.add(self.conns[ci].fd, self.conns[ci].token(ci)),
            Io::Uring(_) => self.ring_watch_connect(ci),
        }
    }

    /// Waits up to `wait_ns` (a wait meant to end by `asked_ns`) and handles what arrived;
    /// returns how many events or completions that was.
    pub(super) fn poll(&mut self, wait_ns: u64, asked_ns: u64) -> io::Result<usize> {
        match self.io {
            Io::Epoll(_) => self.epoll_poll(wait_ns, asked_ns),
            Io::Uring(_) => self.ring_poll(wait_ns, asked_ns),
        }
    }
}
