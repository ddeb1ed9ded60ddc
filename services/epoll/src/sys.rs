//! The few raw syscalls the event loop needs, each wrapped once with its safety argument.

use std::io;
use std::mem::MaybeUninit;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use socket2::Socket;

/// A non-blocking listener on `addr`: the contract's listening socket (ping-common), one per
/// worker with SO_REUSEPORT.
pub fn reuseport_listener(addr: SocketAddr) -> io::Result<Socket> {
    let socket = Socket::from(ping_common::listen::bind_listener(
        addr,
        ping_common::listen::Share::PerCore,
    )?);
    socket.set_nonblocking(true)?;
    Ok(socket)
}

fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn cvt_size(rc: libc::ssize_t) -> io::Result<usize> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// An epoll instance.
pub struct Epoll(OwnedFd);

pub type Event = libc::epoll_event;

pub const IN: u32 = libc::EPOLLIN as u32;
pub const OUT: u32 = libc::EPOLLOUT as u32;
pub const RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const HUP_OR_ERR: u32 = (libc::EPOLLHUP | libc::EPOLLERR) as u32;
pub const ET: u32 = libc::EPOLLET as u32;

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: no pointers; a valid fd on success, which we then own.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Registers `fd` for `events`, tagged with `token`.
    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is a valid epoll_event for the duration of the call.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Waits for events (`timeout_ms` -1: forever); returns how many were written to `events`.
    pub fn wait(&self, events: &mut [Event], timeout_ms: i32) -> io::Result<usize> {
        let max = events.len().min(i32::MAX as usize) as i32;
        // SAFETY: the kernel writes at most `max` events into the slice.
        let n =
            unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), max, timeout_ms) };
        cvt(n).map(|n| n as usize)
    }
}

/// Accepts one connection, already non-blocking and close-on-exec.
pub fn accept(listener: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: null address pointers are allowed (we do not need the peer address).
    let fd = cvt(unsafe {
        libc::accept4(
            listener,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        )
    })?;
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn set_nodelay(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: option value points at a live c_int of the given size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Reads into the spare capacity of `buf` (no zeroing), growing `buf.len()` by the count.
pub fn read_into(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<usize> {
    let spare: &mut [MaybeUninit<u8>] = buf.spare_capacity_mut();
    // SAFETY: the kernel writes at most spare.len() bytes into the spare capacity.
    let n = cvt_size(unsafe { libc::read(fd, spare.as_mut_ptr().cast(), spare.len()) })?;
    // SAFETY: the first n spare bytes were just initialised by read(2).
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

pub fn write(fd: RawFd, bytes: &[u8]) -> io::Result<usize> {
    // SAFETY: the kernel reads at most bytes.len() bytes from the slice.
    cvt_size(unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) })
}

/// Half-closes the write side (FIN after everything written), as the other services do.
pub fn shutdown_write(fd: RawFd) {
    // SAFETY: no pointers; an error (e.g. not connected) is harmless here.
    unsafe { libc::shutdown(fd, libc::SHUT_WR) };
}
