//! Monotonic nanosecond clock (vDSO `CLOCK_MONOTONIC`, the same clock epoll timeouts use).
//! One `u64` per timestamp keeps per-request bookkeeping free of `Instant` arithmetic.

/// Nanoseconds on `CLOCK_MONOTONIC`.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds on `CLOCK_REALTIME` (the clock of kernel receive timestamps).
#[inline]
pub fn real_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A kernel receive timestamp (`CLOCK_REALTIME`) on the monotonic clock, never later than
/// now. Both clocks are read now, so a step of the wall clock costs at most this one sample.
#[inline]
pub fn real_to_mono(real_stamp_ns: u64) -> u64 {
    let (mono, real) = (now_ns(), real_ns());
    mono.saturating_sub(real.saturating_sub(real_stamp_ns))
}

/// Wall clock in Unix milliseconds, for the human-readable start stamp only.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Sleeps until `deadline_ns` on `CLOCK_MONOTONIC` (absolute, so time spent getting here
/// does not lengthen the sleep). Returns early on a signal; callers re-check the clock.
#[inline]
pub fn sleep_until(deadline_ns: u64) -> std::io::Result<()> {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    super::count::add(1);
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    match rc {
        0 | libc::EINTR => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}
