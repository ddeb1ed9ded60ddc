//! Ctrl-C / SIGTERM / SIGHUP (a closed terminal): the handler only sets a flag; every wait loop polls it, stops its
//! children and unwinds so finished cells are written and nothing is orphaned.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

pub fn install() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
    }
}

pub fn requested() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sleeps up to `ms`, returning early (false) when interrupted.
pub fn sleep_ms(ms: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(ms);
    while std::time::Instant::now() < deadline {
        if requested() {
            return false;
        }
        std::thread::sleep(
            std::time::Duration::from_millis(10).min(deadline - std::time::Instant::now()),
        );
    }
    !requested()
}
