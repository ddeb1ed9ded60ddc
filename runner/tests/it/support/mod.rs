//! The one support kit of runner's integration tests: `live` for the tests that start the
//! real binaries (finding them, scratch directories, tiny matrix files), `fixtures` for the
//! synthetic result sets of the compare, report and regenerate tests; and the machine lock.
//!
//! The tests run in parallel threads of one binary. Those that start services under load
//! hold `busy()`; the few whose assertions need the CPUs to themselves (verdicts against a
//! slower service, perf samples, a Python server's start-up within its timeout) hold
//! `quiet()`, so no other load test runs beside them. Tests on files alone hold neither.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub mod fixtures;
pub mod live;

static MACHINE: RwLock<()> = RwLock::new(());

/// Held while a test starts services under load: waits while a `quiet()` test runs.
pub fn busy() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Held while a test that needs the machine quiet runs: no `busy()` test runs beside it.
pub fn quiet() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(PoisonError::into_inner)
}
