//! Thin, checked wrappers over the Linux syscalls the event loops use (epoll, io_uring,
//! non-blocking TCP sockets, clocks, rusage, affinity, rlimits). Everything unsafe lives
//! here, and every syscall a worker makes is counted here (`count`).

pub mod bufring;
pub mod clock;
pub mod count;
pub mod epoll;
pub mod proc;
pub mod socket;
pub mod uring;

/// The current thread's `errno` as an `io::Error`.
pub(crate) fn last_err() -> std::io::Error {
    std::io::Error::last_os_error()
}
