//! Thin, checked wrappers over the Linux syscalls the event loops use (epoll, non-blocking
//! TCP sockets, clocks, rusage, affinity, rlimits). Everything unsafe lives here.

pub mod clock;
pub mod epoll;
pub mod proc;
pub mod socket;

/// The current thread's `errno` as an `io::Error`.
pub(crate) fn last_err() -> std::io::Error {
    std::io::Error::last_os_error()
}
