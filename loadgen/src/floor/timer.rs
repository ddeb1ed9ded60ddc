//! Timer wake-up lateness: sleep to absolute deadlines `t0 + k/rate` with
//! `clock_nanosleep(TIMER_ABSTIME)` (as the open-loop sender waits), and record wake-up −
//! deadline.

use super::{FloorPercentiles, TimerFloor, ns_hist};
use crate::sys::clock::{now_ns, sleep_until};
use crate::sys::proc::CpuMark;

const METHOD: &str = "clock_nanosleep(TIMER_ABSTIME) to absolute CLOCK_MONOTONIC deadlines \
                      t0 + k/rate, with the timer slack an open-loop sender uses at this rate (20 µs \
                      below 100 µs between wake-ups, else 1 ns), no spinning";

pub fn measure(rate_per_s: f64, duration_ms: u64) -> TimerFloor {
    let unsupported = |why: String| TimerFloor {
        rate_per_s,
        method: METHOD.into(),
        lateness: None,
        cpu_per_wakeup_us: None,
        unsupported: Some(why),
    };
    let period_ns = 1e9 / rate_per_s;
    // The slack an open-loop sender uses at this rate, so the floor is what it can reach.
    crate::sys::proc::set_timer_slack(crate::sys::proc::sender_timer_slack_ns(period_ns));
    let mut h = ns_hist();
    let t0 = now_ns() + 1_000_000;
    let end = t0 + duration_ms * 1_000_000;
    let mut k = 0u64;
    let mut wakeups = 0u64;
    let cpu = CpuMark::start();
    loop {
        let deadline = t0 + (k as f64 * period_ns) as u64;
        if deadline >= end {
            break;
        }
        let now = now_ns();
        if now < deadline
            && let Err(e) = sleep_until(deadline)
        {
            return unsupported(format!("clock_nanosleep: {e}"));
        }
        let woke = now_ns();
        // A wait that returned early (a signal) is not a wake-up; sleep again.
        if woke < deadline {
            continue;
        }
        wakeups += 1;
        h.saturating_record((woke - deadline).max(1));
        // Deadlines missed while late are skipped, not queued: each sample is one sleep.
        k = k.max(((woke - t0) as f64 / period_ns) as u64) + 1;
    }
    TimerFloor {
        rate_per_s,
        method: METHOD.into(),
        lateness: FloorPercentiles::from_ns(&h),
        cpu_per_wakeup_us: (wakeups > 0)
            .then(|| CpuMark::end().since(cpu).cpu_ns as f64 / 1e3 / wakeups as f64),
        unsupported: None,
    }
}
