//! One load-generating thread: its own event loop (epoll, or io_uring for the closed loop:
//! `io`, `ring`), connections, schedule and recorder. Nothing is shared with other workers
//! while running.
//!
//! On epoll, syscalls per keep-alive request: one `send` and (usually) one `read`, plus a
//! share of `epoll_pwait2`. Sockets are registered once (`EPOLLIN|EPOLLOUT|EPOLLET`), so no
//! `epoll_ctl` happens per request; a `read` shorter than the free buffer space means the
//! socket is drained (edge-triggered epoll reports every new arrival), which saves the
//! extra `read` returning EAGAIN.

mod closed;
pub mod conn;
mod io;
mod lifecycle;
mod open;
pub mod plan;
mod ring;
mod tls;
mod wire;

use std::io as stdio;
use std::sync::{Arc, Barrier, OnceLock};

use crate::recorder::Recorder;
use crate::report::ConnectionCounts;
use crate::sys::clock::{now_ns, sleep_until};
use crate::sys::epoll::{EV_ERR_HUP, EV_IN, EV_OUT, Event};
use crate::sys::proc::{self, CpuMark, CpuSpan};
use crate::sys::socket;
use crate::sys::uring::Completion;
use conn::{Conn, State};
use io::Io;
use plan::{Plan, Share};

/// Below this, waiting is done by spinning rather than sleeping: a sleep this short
/// overshoots by more (timer wake-up lateness is ~15-30 µs on a VM; see `loadgen --floor`)
/// and costs a wake-up.
const SPIN_NS: u64 = 10_000;
/// Longest sleep while harvesting, so connects, timeouts and the end are noticed promptly.
const HARVEST_MAX_NS: u64 = 10_000_000;
/// Harvesting asks epoll for arrived responses (and closes, connects) at most this often, or
/// at every wake-up once `HARVEST_SPARE` or fewer connections are free: the kernel stamps
/// each response on arrival, so reading it later changes no figure, and one `epoll_pwait2`
/// then serves several sends.
const HARVEST_EVERY_NS: u64 = 1_000_000;
const HARVEST_SPARE: usize = 4;
/// How long the pre-connect phase may take before the clock starts anyway.
const PRECONNECT_MAX_NS: u64 = 2_000_000_000;

/// What one worker thread measured and counted, handed back after its run.
pub struct WorkerTally {
    pub rec: Recorder,
    pub connections: ConnectionCounts,
    /// The thread's CPU over the measured window (from its start to the thread's stop).
    pub cpu: CpuSpan,
    /// Time inside the measured window spent polling with nothing to do while waiting for a
    /// send due in under `SPIN_NS`: CPU used by choice (for timing precision), not load.
    pub spin_wait_ns: u64,
    /// Times the thread slept and woke inside the measured window.
    pub wakeups: u64,
    /// Monotonic time the worker stopped.
    pub finished_ns: u64,
    /// Why the worker stopped early, if it did.
    pub gave_up: Option<String>,
    pub unsolicited: u64,
    /// Connection set-up times (µs): connect to established, TLS handshake included.
    pub setup: hdrhistogram::Histogram<u64>,
    /// Over TLS: what the first handshake settled on, and the first TLS failure.
    pub tls_session: Option<crate::report::TlsSession>,
    pub tls_error: Option<String>,
}

/// Shared start line: workers pre-connect, then all agree on one `t0`.
pub struct StartLine {
    pub barrier: Barrier,
    pub t0_ns: OnceLock<u64>,
}

pub struct Worker {
    plan: Arc<Plan>,
    share: Share,
    io: Io,
    conns: Vec<Conn>,
    events: Vec<Event>,
    done: Vec<Completion>,
    rec: Recorder,
    cc: ConnectionCounts,
    t0_ns: u64,
    ws_ns: u64,
    end_ns: u64,
    budget: Option<u64>,
    in_flight_total: u64,
    open_count: u32,
    connecting_count: u32,
    down: Vec<usize>,
    free: Vec<usize>,
    /// Open loop: next own schedule slot to become due / to be sent; slots whose index is
    /// below `queued_upto` waited for a free connection.
    next_due_j: u64,
    next_send_j: u64,
    j_end: u64,
    queued_upto: u64,
    stop: bool,
    /// The clock started (pre-connect phase over).
    started: bool,
    unsolicited: u64,
    last_up_ns: u64,
    /// Open loop: responses are collected at send wake-ups with kernel receive stamps
    /// (off when the sockets cannot stamp).
    harvest: bool,
    /// Open loop: due requests are waiting for a free connection.
    backlogged: bool,
    wakeups: u64,
    /// The last wait was to end by `asked_ns`; the thread ran again from `woke_ns`. A send
    /// due meanwhile is late by at least `woke_ns - max(due, asked_ns)` through no work of
    /// its own (`Recorder::wake_lag`).
    asked_ns: u64,
    woke_ns: u64,
    /// Harvesting: when epoll is next asked for what arrived.
    next_harvest_ns: u64,
    setup: hdrhistogram::Histogram<u64>,
    tls_session: Option<crate::report::TlsSession>,
    tls_error: Option<String>,
}

impl Worker {
    pub fn new(plan: Arc<Plan>, share: Share) -> stdio::Result<Self> {
        let n = share.connections as usize;
        let j_end = plan.open.map_or(0, |o| {
            let (i, t) = (share.index as u64, plan.threads as u64);
            if o.k_end > i {
                (o.k_end - i).div_ceil(t)
            } else {
                0
            }
        });
        Ok(Self {
            io: Io::new(plan.io, n, plan.multishot)?,
            conns: (0..n)
                .map(|_| {
                    let mut c = Conn::new();
                    if plan.req.h2_block.is_some() {
                        c.h2 = Some(Box::default());
                    }
                    c
                })
                .collect(),
            events: Vec::with_capacity(n.min(1024)),
            done: Vec::with_capacity(n * 2),
            rec: Recorder::new(
                0,
                plan.open.is_some(),
                plan.expect_status,
                plan.expect_body_bytes,
            ),
            cc: ConnectionCounts::default(),
            t0_ns: 0,
            ws_ns: 0,
            end_ns: u64::MAX,
            budget: share.budget,
            in_flight_total: 0,
            open_count: 0,
            connecting_count: 0,
            down: Vec::with_capacity(n),
            free: Vec::with_capacity(n),
            next_due_j: 0,
            next_send_j: 0,
            j_end,
            queued_upto: 0,
            stop: false,
            started: false,
            unsolicited: 0,
            last_up_ns: 0,
            // Over TLS responses are read through the session: no kernel stamps to harvest by.
            harvest: plan.open.is_some() && plan.tls.is_none(),
            backlogged: false,
            wakeups: 0,
            asked_ns: 0,
            woke_ns: 0,
            next_harvest_ns: 0,
            setup: crate::recorder::new_hist(3),
            tls_session: None,
            tls_error: None,
            plan,
            share,
        })
    }

    pub fn run(mut self, start: &StartLine) -> WorkerTally {
        // Open loop: slack suited to this thread's send spacing; otherwise timers are only for
        // timeouts and reconnects, which want no slack either.
        let period_ns = self.plan.open.map_or(f64::INFINITY, |o| {
            o.ns_per_request * self.plan.threads as f64
        });
        proc::set_timer_slack(proc::sender_timer_slack_ns(period_ns));
        // Pre-connect so the first measured requests do not pay for handshakes, within a
        // bounded time: slots not even started by then connect from the main loop.
        let now = now_ns();
        let pre_deadline = now + self.plan.timeout_ns.min(PRECONNECT_MAX_NS);
        for ci in 0..self.conns.len() {
            if now_ns() >= pre_deadline {
                self.down.push(ci);
                continue;
            }
            self.start_connect(ci, now, false);
        }
        while self.connecting_count > 0 {
            let now = now_ns();
            if now >= pre_deadline {
                break;
            }
            if self.poll(pre_deadline - now, pre_deadline).is_err() {
                break;
            }
        }
        // A fresh recorder for the measured run (the pre-connect phase's records are not
        // the run's), made before the start line: zeroing its histograms takes most of a
        // millisecond on a VM, which after it would make the first sends late.
        self.rec = Recorder::new(
            0,
            self.plan.open.is_some(),
            self.plan.expect_status,
            self.plan.expect_body_bytes,
        );
        start.barrier.wait();
        self.t0_ns = *start.t0_ns.get_or_init(|| now_ns() + 1_000_000);
        self.ws_ns = self.t0_ns + self.plan.warmup_ns;
        self.end_ns = self.plan.duration_ns.map_or(u64::MAX, |d| self.ws_ns + d);
        self.rec.set_window_start(self.ws_ns);
        // Spin to the start line (at most ~1 ms): the first sends are due exactly at `t0`, and
        // a sleep would make them as late as a wake-up is.
        while now_ns() < self.t0_ns {
            std::hint::spin_loop();
        }
        self.woke(self.t0_ns);
        self.main_loop()
    }

    fn main_loop(mut self) -> WorkerTally {
        let mut cpu_at_ws = None;
        let scan_every_ns = (self.plan.timeout_ns / 10).clamp(1_000_000, 100_000_000);
        let mut next_scan_ns = self.t0_ns + scan_every_ns;
        let mut gave_up = None;
        let mut spin_wait_ns = 0;
        let now = now_ns();
        self.last_up_ns = now;
        self.started = true;
        if self.plan.open.is_none() {
            for ci in 0..self.conns.len() {
                if self.conns[ci].state == State::Open {
                    self.issue_closed(ci, now);
                }
            }
        }
        loop {
            let now = now_ns();
            if cpu_at_ws.is_none() && now >= self.ws_ns {
                cpu_at_ws = Some(CpuMark::start());
            }
            if now >= self.end_ns || self.stop {
                if self.harvest && !self.stop {
                    // Collect what arrived before the end but was not yet harvested (its
                    // kernel stamp decides whether it counts).
                    let _ = self.poll(0, 0);
                }
                break;
            }
            if now >= next_scan_ns {
                if self.harvest {
                    // What arrived in time must not be taken for a timeout.
                    let _ = self.poll(0, 0);
                }
                self.scan_timeouts(now);
                next_scan_ns = now + scan_every_ns;
            }
            let mut deadline = self.end_ns.min(next_scan_ns);
            if !self.down.is_empty() {
                deadline = deadline.min(self.reconnect_due(now));
            }
            if self.plan.open.is_some() {
                deadline = deadline.min(self.dispatch_open());
            }
            if self.finished(now) {
                break;
            }
            if let Some(reason) = self.unreachable(now) {
                gave_up = Some(reason);
                break;
            }
            if self.plan.warmup_ns > 0 && cpu_at_ws.is_none() {
                deadline = deadline.min(self.ws_ns);
            }
            let in_window = cpu_at_ws.is_some();
            if let Err(e) = self.wait(deadline, in_window, &mut spin_wait_ns) {
                gave_up = Some(format!("waiting for I/O failed: {e}"));
                break;
            }
        }
        let finished_ns = now_ns().min(self.end_ns);
        let cpu = cpu_at_ws.map_or(CpuSpan::default(), |a| CpuMark::end().since(a));
        self.close_all(finished_ns);
        WorkerTally {
            rec: self.rec,
            connections: self.cc,
            cpu,
            spin_wait_ns,
            wakeups: self.wakeups,
            finished_ns,
            gave_up,
            unsolicited: self.unsolicited,
            setup: self.setup,
            tls_session: self.tls_session,
            tls_error: self.tls_error,
        }
    }

    /// Wait until `deadline` or I/O, whichever the mode calls for, and handle what arrived.
    ///
    /// Open loop with no request waiting for a connection ("harvesting"): sleep
    /// (`clock_nanosleep`, cheaper per wake-up than an epoll wait, and I/O cannot wake it)
    /// until the next send is due, send, then collect every response that arrived meanwhile
    /// (every `HARVEST_EVERY_NS`), each stamped with its kernel receive time. One wake-up per
    /// send (or per group of sends due within `OpenPlan::coalesce_ns`) instead of one per send
    /// plus one per response. The due sends go first while connections are spare: the responses keep
    /// their stamps, so only the sends' lateness depends on the order. A wait shorter than
    /// `SPIN_NS` spins on the clock: a sleep would overshoot it by more than the spin costs.
    /// Otherwise (closed loop, or requests queued for a connection, which a response must
    /// free at once): wait for I/O or the deadline.
    fn wait(
        &mut self,
        deadline: u64,
        in_window: bool,
        spin_wait_ns: &mut u64,
    ) -> stdio::Result<()> {
        let now = now_ns();
        let wait = deadline.saturating_sub(now);
        if self.harvest && !self.backlogged {
            if wait > 0 && wait < SPIN_NS {
                while now_ns() < deadline {
                    std::hint::spin_loop();
                }
                self.woke(deadline);
                if in_window {
                    *spin_wait_ns += self.woke_ns - now;
                }
            } else if wait > 0 {
                let wait = wait.min(HARVEST_MAX_NS);
                sleep_until(now + wait)?;
                self.woke(now + wait);
                self.wakeups += u64::from(in_window);
            }
            let spare = self.free.len() > HARVEST_SPARE;
            if wait > 0 && spare && self.woke_ns < self.end_ns {
                self.dispatch_open();
            }
            let t = if wait > 0 { self.woke_ns } else { now };
            if wait == 0 || !spare || t >= self.next_harvest_ns {
                self.next_harvest_ns = t + HARVEST_EVERY_NS;
                self.poll(0, 0)?;
            }
            return Ok(());
        }
        let spinning = wait > 0 && wait < SPIN_NS;
        let n = self.poll(if spinning { 0 } else { wait }, deadline)?;
        if spinning && n == 0 && in_window {
            *spin_wait_ns += now_ns() - now;
        }
        if !spinning && wait > 0 && in_window {
            self.wakeups += 1;
        }
        Ok(())
    }

    /// Requests-only runs end when everything is issued and answered (open loop: and the
    /// schedule is over).
    fn finished(&self, now: u64) -> bool {
        if self.in_flight_total > 0 || now < self.ws_ns {
            return false;
        }
        match self.plan.open {
            // The window spans the whole schedule, however early the last send completes.
            Some(o) => self.next_send_j >= self.j_end && now >= o.end_ns(self.t0_ns),
            None => self.budget == Some(0),
        }
    }

    /// Stop early when the target cannot be reached, so a dead target never hangs a run.
    fn unreachable(&mut self, now: u64) -> Option<String> {
        if self.open_count > 0 {
            self.last_up_ns = now;
            return None;
        }
        let all_failed = self.conns.iter().all(|c| c.connect_failures > 0);
        if self.cc.established == 0 && all_failed {
            return Some("target refused every connection".into());
        }
        let grace_ns = self.plan.timeout_ns.max(1_000_000_000);
        if self.plan.duration_ns.is_none() && all_failed && now - self.last_up_ns >= grace_ns {
            return Some(format!(
                "target unreachable for {} ms; stopped early",
                (now - self.last_up_ns) / 1_000_000
            ));
        }
        None
    }

    /// A wait that was to end by `asked_ns` has just ended.
    #[inline]
    fn woke(&mut self, asked_ns: u64) {
        self.asked_ns = asked_ns;
        self.woke_ns = now_ns();
    }

    /// `poll` on epoll: wait for readiness, then read and write what is ready.
    fn epoll_poll(&mut self, wait_ns: u64, asked_ns: u64) -> stdio::Result<usize> {
        let mut events = std::mem::take(&mut self.events);
        let Io::Epoll(ep) = &mut self.io else {
            unreachable!("epoll_poll on epoll only")
        };
        ep.wait(wait_ns, &mut events)?;
        if wait_ns > 0 {
            self.woke(asked_ns);
        }
        for ev in &events {
            self.on_event(*ev);
        }
        let n = events.len();
        self.events = events;
        Ok(n)
    }

    fn on_event(&mut self, ev: Event) {
        let ci = (ev.token & 0xffff_ffff) as usize;
        let Some(c) = self.conns.get(ci) else { return };
        if c.generation != (ev.token >> 32) as u32 || c.fd < 0 {
            return;
        }
        if c.state == State::Connecting && c.tls.is_some() {
            self.handshake(ci);
            return;
        }
        if c.state == State::Connecting {
            if ev.bits & (EV_OUT | EV_ERR_HUP) == 0 {
                return;
            }
            match socket::take_error(c.fd) {
                Ok(()) if self.plan.tls.is_some() => {
                    self.start_handshake(ci);
                    return;
                }
                Ok(()) => self.on_established(ci),
                Err(_) => {
                    self.connect_failed(ci, now_ns());
                    return;
                }
            }
        }
        let c = &self.conns[ci];
        if c.state != State::Open {
            return;
        }
        if ev.bits & EV_OUT != 0 && (c.written < c.wlen || c.tls_pending()) {
            self.flush(ci);
        }
        if ev.bits & (EV_IN | EV_ERR_HUP) != 0 && self.conns[ci].state == State::Open {
            self.read_ready(ci, ev.bits & EV_ERR_HUP != 0);
        }
    }
}
