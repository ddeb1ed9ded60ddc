//! Timer wake-up lateness: sleep to absolute deadlines `t0 + k/rate` on an empty epoll set
//! with `epoll_pwait2` (as the open-loop sender waits), and record wake-up − deadline.

use super::{FloorPercentiles, TimerFloor, ns_hist};
use crate::sys::clock::now_ns;
use crate::sys::epoll::Epoll;

const METHOD: &str = "epoll_pwait2 on an empty set to absolute CLOCK_MONOTONIC deadlines \
                      t0 + k/rate, with the timer slack an open-loop sender uses at this rate (20 µs \
                      below 100 µs between wake-ups, else 1 ns), no spinning";

pub fn measure(rate_per_s: f64, duration_ms: u64) -> TimerFloor {
    let unsupported = |why: String| TimerFloor {
        rate_per_s,
        method: METHOD.into(),
        lateness: None,
        unsupported: Some(why),
    };
    let mut ep = match Epoll::new(1) {
        Ok(ep) => ep,
        Err(e) => return unsupported(format!("epoll_create1: {e}")),
    };
    let period_ns = 1e9 / rate_per_s;
    // The slack an open-loop sender uses at this rate, so the floor is what it can reach.
    crate::sys::proc::set_timer_slack(crate::sys::proc::sender_timer_slack_ns(period_ns));
    let mut events = Vec::new();
    let mut h = ns_hist();
    let t0 = now_ns() + 1_000_000;
    let end = t0 + duration_ms * 1_000_000;
    let mut k = 0u64;
    loop {
        let deadline = t0 + (k as f64 * period_ns) as u64;
        if deadline >= end {
            break;
        }
        let now = now_ns();
        if now < deadline
            && let Err(e) = ep.wait(deadline - now, &mut events)
        {
            return unsupported(format!("epoll_pwait2: {e}"));
        }
        let woke = now_ns();
        // A wait that returned early (a signal) is not a wake-up; sleep again.
        if woke < deadline {
            continue;
        }
        h.saturating_record((woke - deadline).max(1));
        // Deadlines missed while late are skipped, not queued: each sample is one sleep.
        k = k.max(((woke - t0) as f64 / period_ns) as u64) + 1;
    }
    TimerFloor {
        rate_per_s,
        method: METHOD.into(),
        lateness: FloorPercentiles::from_ns(&h),
        unsupported: None,
    }
}
