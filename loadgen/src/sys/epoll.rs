//! Edge-triggered epoll with nanosecond waits (`epoll_pwait2`). Each socket is registered
//! once for `EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET` and never modified again, so a request
//! costs no `epoll_ctl` (wrk pays two).

use std::io;
use std::os::fd::RawFd;

use super::last_err;

pub struct Epoll {
    fd: RawFd,
    events: Vec<libc::epoll_event>,
}

/// Readiness bits of one event, copied out of the kernel array.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub token: u64,
    pub bits: u32,
}

pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR_HUP: u32 = (libc::EPOLLERR | libc::EPOLLHUP | libc::EPOLLRDHUP) as u32;

impl Epoll {
    pub fn new(capacity: usize) -> io::Result<Self> {
        super::count::add(1);
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(last_err());
        }
        let events = vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(16)];
        Ok(Self { fd, events })
    }

    /// Register `fd` once, edge-triggered for reading and writing.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        super::count::add(1);
        // SAFETY: `ev` is valid for the call; the kernel copies it.
        if unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(last_err());
        }
        Ok(())
    }

    /// Wait up to `timeout_ns` (0 = poll) and append ready events to `out`.
    pub fn wait(&mut self, timeout_ns: u64, out: &mut Vec<Event>) -> io::Result<()> {
        out.clear();
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        super::count::add(1);
        // SAFETY: the events buffer outlives the call and its length is passed.
        let n = unsafe {
            libc::epoll_pwait2(
                self.fd,
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                &ts,
                std::ptr::null(),
            )
        };
        if n < 0 {
            let e = last_err();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(());
            }
            return Err(e);
        }
        out.extend(self.events[..n as usize].iter().map(|e| Event {
            token: e.u64,
            bits: e.events,
        }));
        Ok(())
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}
