//! Start-up of a thread-per-core service, the same in each of them: which CPU worker *i* is
//! pinned to, starting the workers, waiting until every one has bound its listener (or
//! failed), holding them until the start-up line is out, and counting the io_uring rings the
//! process holds. The runtime-specific part (what a worker runs, how a runtime pins itself)
//! stays in each service.
//!
//! Start-up is *start → print → release*: a worker that reports ready ([`Ready::serving`])
//! waits, on a futex, until the main thread has printed the start-up line and called
//! [`Started::release`]; only then does it enter its event loop. Natively this changes
//! nothing a client sees (nobody connects before the line). Under Valgrind it is what lets
//! the line come out at all: Valgrind runs one thread at a time under its own lock, and up to
//! 3.22 it does not know that `io_uring_enter` may block, so a worker waiting for its first
//! completion keeps that lock inside the kernel and the main thread, which still had to
//! count the ring fds and print, never ran again (docs/counted-cost.md).

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

/// Where the workers run: worker *i* on the *i*-th allowed CPU, if there are enough CPUs.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The CPUs in the affinity mask at start (the start-up line's `allowed_cpus`).
    pub allowed: Vec<usize>,
    /// Whether workers are pinned (the start-up line's `pinned`).
    pub pin: bool,
}

impl Placement {
    /// With more workers than allowed CPUs, pinning would stack workers on the same CPUs, so
    /// placement is left to the kernel then.
    pub fn for_workers(workers: usize) -> Placement {
        let allowed = crate::cpus::allowed_cpus();
        let pin = workers <= allowed.len();
        Placement { allowed, pin }
    }

    /// The CPU worker `i` is pinned to, if workers are pinned.
    pub fn cpu(&self, i: usize) -> Option<usize> {
        if self.pin {
            self.allowed.get(i).copied()
        } else {
            None
        }
    }
}

/// Closed until the main thread has printed the start-up line.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        while !*open {
            open = self
                .opened
                .wait(open)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// A worker's one start-up message: [`Ready::serving`] once it can serve, [`Ready::failed`]
/// if it cannot start.
pub struct Ready<T> {
    tx: Sender<Result<T, String>>,
    gate: Arc<Gate>,
}

impl<T> Ready<T> {
    /// Reports this worker ready with `report`, then waits until the start-up line is out
    /// ([`Started::release`]): call it just before the event loop, never from inside it.
    pub fn serving(self, report: T) {
        if self.tx.send(Ok(report)).is_ok() {
            self.gate.wait();
        }
        // If the main thread is gone (another worker failed), the process is exiting.
    }

    /// Reports that this worker cannot start, and why.
    pub fn failed(self, why: impl Into<String>) {
        let _ = self.tx.send(Err(why.into()));
    }
}

/// Workers that all reported ready and are waiting to be released: their handles (in start
/// order) and their reports (in the order they arrived).
pub struct Started<H, T> {
    pub handles: Vec<H>,
    pub reports: Vec<T>,
    gate: Arc<Gate>,
}

impl<H, T> Started<H, T> {
    /// Lets every worker enter its event loop: call it once the start-up line is printed.
    /// Returns the handles, to join.
    pub fn release(mut self) -> Vec<H> {
        self.gate.open();
        std::mem::take(&mut self.handles)
    }
}

impl<H, T> Drop for Started<H, T> {
    /// Never leaves a worker waiting, whatever path the main thread takes.
    fn drop(&mut self) {
        self.gate.open();
    }
}

/// Starts `workers` workers with `spawn(i, ready)` (a thread, an executor: whatever handle it
/// returns) and waits for each one's ready message. The first start-up failure is the error.
/// The workers then wait for [`Started::release`].
pub fn start<H, T>(
    workers: usize,
    mut spawn: impl FnMut(usize, Ready<T>) -> Result<H, String>,
) -> Result<Started<H, T>, String> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let gate = Arc::new(Gate::default());
    let mut handles = Vec::with_capacity(workers);
    for i in 0..workers {
        let ready = Ready {
            tx: ready_tx.clone(),
            gate: gate.clone(),
        };
        match spawn(i, ready) {
            Ok(h) => handles.push(h),
            Err(e) => {
                gate.open();
                return Err(e);
            }
        }
    }
    // Only the workers hold senders now: if they all die, `recv` fails instead of blocking.
    drop(ready_tx);
    let mut reports = Vec::with_capacity(workers);
    for _ in 0..workers {
        match ready_rx.recv() {
            Ok(Ok(report)) => reports.push(report),
            Ok(Err(e)) => {
                gate.open();
                return Err(format!("worker failed to start: {e}"));
            }
            Err(_) => {
                gate.open();
                return Err("a worker exited during start-up".into());
            }
        }
    }
    Ok(Started {
        handles,
        reports,
        gate,
    })
}

/// [`start`] with one OS thread per worker, named `{name}-{i}`, running `work(cpu, ready)`
/// where `cpu` is the CPU [`Placement`] gives it (the worker pins itself, the way its runtime
/// does).
pub fn start_threads<T: Send + 'static>(
    name: &str,
    workers: usize,
    placement: &Placement,
    work: impl Fn(Option<usize>, Ready<T>) + Clone + Send + 'static,
) -> Result<Started<std::thread::JoinHandle<()>, T>, String> {
    start(workers, |i, ready| {
        let cpu = placement.cpu(i);
        let work = work.clone();
        std::thread::Builder::new()
            .name(format!("{name}-{i}"))
            .spawn(move || work(cpu, ready))
            .map_err(|e| e.to_string())
    })
}

/// Pins the calling thread to one CPU (`sched_setaffinity`), for workers whose runtime has no
/// pinning of its own.
pub fn pin_current_thread(cpu: usize) -> Result<(), String> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)
        .and_then(|()| nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set))
        .map_err(|e| format!("cannot pin to cpu {cpu}: {e}"))
}

/// `anon_inode:[io_uring]` fds of this process: what an io_uring runtime really set up (one
/// ring per monoio or compio worker, several per glommio executor). `None` if `/proc/self/fd`
/// cannot be read.
pub fn io_uring_fds() -> Option<usize> {
    let dir = std::fs::read_dir("/proc/self/fd").ok()?;
    Some(
        dir.filter_map(Result::ok)
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .filter(|target| target.as_os_str() == "anon_inode:[io_uring]")
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_pins_only_when_every_worker_has_a_cpu() {
        let p = Placement {
            allowed: vec![2, 5],
            pin: true,
        };
        assert_eq!((p.cpu(0), p.cpu(1), p.cpu(2)), (Some(2), Some(5), None));
        let all = Placement::for_workers(1);
        assert!(all.pin);
        let over = Placement::for_workers(all.allowed.len() + 1);
        assert!(!over.pin);
        assert_eq!(over.cpu(0), None);
    }

    #[test]
    fn start_waits_for_every_report_and_holds_workers_until_released() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let past = Arc::new(AtomicUsize::new(0));
        let placement = Placement::for_workers(3);
        let counter = past.clone();
        let started = start_threads(
            "t",
            3,
            &placement,
            move |cpu, ready: Ready<Option<usize>>| {
                ready.serving(cpu);
                counter.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        assert_eq!(started.handles.len(), 3);
        assert_eq!(started.reports.len(), 3);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            past.load(Ordering::SeqCst),
            0,
            "a worker ran before release"
        );
        for h in started.release() {
            h.join().unwrap();
        }
        assert_eq!(past.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_dropped_start_releases_its_workers() {
        let placement = Placement::for_workers(1);
        let mut started =
            start_threads("t", 1, &placement, |_, ready: Ready<()>| ready.serving(())).unwrap();
        let handles = std::mem::take(&mut started.handles);
        drop(started);
        for h in handles {
            h.join().unwrap();
        }
    }

    #[test]
    fn a_failed_or_vanished_worker_is_the_error() {
        let failed = start(2, |i, ready: Ready<()>| {
            if i == 1 {
                ready.failed("no ring");
            }
            Ok(())
        });
        assert_eq!(
            failed.err().as_deref(),
            Some("worker failed to start: no ring")
        );
        let vanished = start(2, |_, ready: Ready<()>| {
            drop(ready);
            Ok(())
        });
        assert_eq!(
            vanished.err().as_deref(),
            Some("a worker exited during start-up")
        );
        let unspawnable = start(2, |_, _: Ready<()>| Err::<(), _>("no thread".into()));
        assert_eq!(unspawnable.err().as_deref(), Some("no thread"));
    }

    #[test]
    fn io_uring_fds_counts_on_linux() {
        assert!(io_uring_fds().is_some());
    }
}
