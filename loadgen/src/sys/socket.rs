//! Non-blocking TCP client sockets on raw fds: connect, `read`, `send(MSG_NOSIGNAL)`, close.
//! Raw fds (not `std::net`) because the event loop needs non-blocking connect and must not
//! die of SIGPIPE when a server vanishes mid-write.

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

use super::last_err;

/// Outcome of starting a connect.
pub enum Connect {
    /// Connected already (common on loopback) or in progress; wait for writability.
    Started(RawFd),
    /// Failed synchronously (e.g. refused on loopback).
    Failed,
}

fn sockaddr(addr: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// Open a non-blocking TCP socket with TCP_NODELAY and start connecting to `addr`.
pub fn connect(addr: &SocketAddr) -> io::Result<Connect> {
    let family = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // socket, setsockopt, connect (and close if it failed at once).
    super::count::add(3);
    // SAFETY: plain syscalls on an fd we own; pointers are valid for each call.
    unsafe {
        let fd = libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(last_err());
        }
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let (ss, len) = sockaddr(addr);
        let rc = libc::connect(fd, &ss as *const _ as *const libc::sockaddr, len);
        if rc == 0 {
            return Ok(Connect::Started(fd));
        }
        let e = last_err();
        if e.raw_os_error() == Some(libc::EINPROGRESS) {
            Ok(Connect::Started(fd))
        } else {
            super::count::add(1);
            libc::close(fd);
            Ok(Connect::Failed)
        }
    }
}

/// Pending error of a connecting socket (`SO_ERROR`); `Ok(())` once connected.
pub fn take_error(fd: RawFd) -> io::Result<()> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    super::count::add(1);
    // SAFETY: valid out-pointers for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut err as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if rc < 0 {
        return Err(last_err());
    }
    if err != 0 {
        return Err(io::Error::from_raw_os_error(err));
    }
    Ok(())
}

/// `read(2)`; `Ok(0)` is EOF, `WouldBlock` means drained.
#[inline]
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    super::count::add(1);
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if n < 0 {
        Err(last_err())
    } else {
        Ok(n as usize)
    }
}

/// Ask the kernel to stamp every received segment (`SO_TIMESTAMPNS`), so a response's
/// arrival time is known even when it is read later.
pub fn enable_rx_timestamps(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    super::count::add(1);
    // SAFETY: valid pointer and length for the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 { Err(last_err()) } else { Ok(()) }
}

/// `recvmsg(2)` into `buf`, with the kernel's receive time (`CLOCK_REALTIME` ns) of the last
/// segment read, if the socket stamps. `Ok((0, _))` is EOF, `WouldBlock` means drained.
#[inline]
pub fn read_stamped(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    // Room for one cmsg carrying a timespec (aligned as cmsghdr needs).
    let mut control = [0u64; 8];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: all-zero msghdr is valid; the pointers set below outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    super::count::add(1);
    // SAFETY: msg describes valid buffers for the call.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(last_err());
    }
    let mut stamp = None;
    // SAFETY: the kernel filled `control` and set msg_controllen; the CMSG_* walkers stay
    // within it, and SCM_TIMESTAMPNS data is a timespec.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                stamp = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// `send(2)` without SIGPIPE.
#[inline]
pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    super::count::add(1);
    // SAFETY: the buffer is valid for `buf.len()` bytes.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(last_err())
    } else {
        Ok(n as usize)
    }
}

pub fn close(fd: RawFd) {
    super::count::add(1);
    // SAFETY: callers pass fds they own and forget them afterwards.
    unsafe { libc::close(fd) };
}

/// Shut both directions of `fd` down, so operations the kernel still holds on it (an
/// io_uring receive) complete now instead of keeping the connection open past `close`.
pub fn shutdown(fd: RawFd) {
    super::count::add(1);
    // SAFETY: plain syscall on an fd the caller owns.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}
