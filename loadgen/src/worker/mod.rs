//! One load-generating thread: its own edge-triggered epoll loop, connections, schedule and
//! recorder. Nothing is shared with other workers while running.
//!
//! Syscalls per keep-alive request: one `send` and (usually) one `read`, plus a share of
//! `epoll_pwait2`. Sockets are registered once (`EPOLLIN|EPOLLOUT|EPOLLET`), so no
//! `epoll_ctl` happens per request; a `read` shorter than the free buffer space means the
//! socket is drained (edge-triggered epoll reports every new arrival), which saves the
//! extra `read` returning EAGAIN.

pub mod conn;
pub mod plan;

use std::io;
use std::sync::{Arc, Barrier, OnceLock};

use crate::http::response::{Response, Step};
use crate::report::ConnectionCounts;
use crate::stats::{ErrorKind, Recorder};
use crate::sys::clock::now_ns;
use crate::sys::epoll::{EV_ERR_HUP, EV_IN, EV_OUT, Epoll, Event};
use crate::sys::{proc, socket};
use conn::{Conn, State};
use plan::{Plan, Share};

/// Below this, waiting is done by polling rather than sleeping (sleep/wake jitter is larger).
const SPIN_NS: u64 = 20_000;
/// How long the pre-connect phase may take before the clock starts anyway.
const PRECONNECT_MAX_NS: u64 = 2_000_000_000;

/// Everything a worker hands back after its run.
pub struct Outcome {
    pub rec: Recorder,
    pub connections: ConnectionCounts,
    pub cpu_user_us: u64,
    pub cpu_sys_us: u64,
    /// Monotonic time the worker stopped.
    pub finished_ns: u64,
    /// Why the worker stopped early, if it did.
    pub gave_up: Option<String>,
    pub unsolicited: u64,
}

/// Shared start line: workers pre-connect, then all agree on one `t0`.
pub struct StartLine {
    pub barrier: Barrier,
    pub t0_ns: OnceLock<u64>,
}

pub struct Worker {
    plan: Arc<Plan>,
    share: Share,
    ep: Epoll,
    conns: Vec<Conn>,
    events: Vec<Event>,
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
}

impl Worker {
    pub fn new(plan: Arc<Plan>, share: Share) -> io::Result<Self> {
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
            ep: Epoll::new(n.min(1024))?,
            conns: (0..n).map(|_| Conn::new()).collect(),
            events: Vec::with_capacity(n.min(1024)),
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
            plan,
            share,
        })
    }

    pub fn run(mut self, start: &StartLine) -> Outcome {
        proc::tight_timer_slack();
        // Pre-connect so the first measured requests do not pay for handshakes.
        let now = now_ns();
        for ci in 0..self.conns.len() {
            self.start_connect(ci, now, false);
        }
        let pre_deadline = now + self.plan.timeout_ns.min(PRECONNECT_MAX_NS);
        while self.connecting_count > 0 {
            let now = now_ns();
            if now >= pre_deadline {
                break;
            }
            if self.poll(pre_deadline - now).is_err() {
                break;
            }
        }
        start.barrier.wait();
        self.t0_ns = *start.t0_ns.get_or_init(|| now_ns() + 1_000_000);
        self.ws_ns = self.t0_ns + self.plan.warmup_ns;
        self.end_ns = self.plan.duration_ns.map_or(u64::MAX, |d| self.ws_ns + d);
        self.rec = Recorder::new(
            self.ws_ns,
            self.plan.open.is_some(),
            self.plan.expect_status,
            self.plan.expect_body_bytes,
        );
        while now_ns() < self.t0_ns {
            std::hint::spin_loop();
        }
        self.main_loop()
    }

    fn main_loop(mut self) -> Outcome {
        let mut cpu_at_ws = None;
        let scan_every_ns = (self.plan.timeout_ns / 10).clamp(1_000_000, 100_000_000);
        let mut next_scan_ns = self.t0_ns + scan_every_ns;
        let mut gave_up = None;
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
                cpu_at_ws = Some(proc::thread_cpu_us());
            }
            if now >= self.end_ns || self.stop {
                break;
            }
            if now >= next_scan_ns {
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
            let now = now_ns();
            let wait = deadline.saturating_sub(now);
            let wait = if wait < SPIN_NS { 0 } else { wait };
            if let Err(e) = self.poll(wait) {
                gave_up = Some(format!("epoll failed: {e}"));
                break;
            }
        }
        let finished_ns = now_ns().min(self.end_ns);
        let (u1, s1) = proc::thread_cpu_us();
        let (u0, s0) = cpu_at_ws.unwrap_or((u1, s1));
        self.close_all(finished_ns);
        Outcome {
            rec: self.rec,
            connections: self.cc,
            cpu_user_us: u1 - u0,
            cpu_sys_us: s1 - s0,
            finished_ns,
            gave_up,
            unsolicited: self.unsolicited,
        }
    }

    /// Requests-only runs end when everything is issued and answered.
    fn finished(&self, now: u64) -> bool {
        if self.in_flight_total > 0 || now < self.ws_ns {
            return false;
        }
        match self.plan.open {
            Some(_) => self.next_send_j >= self.j_end,
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

    fn poll(&mut self, wait_ns: u64) -> io::Result<()> {
        let mut events = std::mem::take(&mut self.events);
        self.ep.wait(wait_ns, &mut events)?;
        for ev in &events {
            self.on_event(*ev);
        }
        self.events = events;
        Ok(())
    }

    fn on_event(&mut self, ev: Event) {
        let ci = (ev.token & 0xffff_ffff) as usize;
        let Some(c) = self.conns.get(ci) else { return };
        if c.generation != (ev.token >> 32) as u32 || c.fd < 0 {
            return;
        }
        if c.state == State::Connecting {
            if ev.bits & (EV_OUT | EV_ERR_HUP) == 0 {
                return;
            }
            match socket::take_error(c.fd) {
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
        if ev.bits & EV_OUT != 0 && c.written < c.wlen {
            self.flush(ci);
        }
        if ev.bits & (EV_IN | EV_ERR_HUP) != 0 && self.conns[ci].state == State::Open {
            self.read_ready(ci);
        }
    }

    // ---- connections -------------------------------------------------------------------

    /// Open a socket for slot `ci`. `with_batch`: closed loop issues a batch now, written as
    /// soon as the connection is up (so its latency includes the handshake).
    fn start_connect(&mut self, ci: usize, now: u64, with_batch: bool) {
        self.cc.requested += 1;
        let c = &mut self.conns[ci];
        c.reset_socket();
        c.generation = c.generation.wrapping_add(1);
        c.connect_started_ns = now;
        match socket::connect(&self.plan.addr) {
            Ok(socket::Connect::Started(fd)) => {
                c.fd = fd;
                c.state = State::Connecting;
                self.connecting_count += 1;
                if let Err(_e) = self.ep.add(fd, c.token(ci)) {
                    self.connect_failed(ci, now);
                    return;
                }
                if with_batch {
                    self.issue_closed(ci, now);
                }
            }
            Ok(socket::Connect::Failed) | Err(_) => {
                c.state = State::Connecting;
                self.connecting_count += 1;
                if with_batch {
                    // The batch is issued and then lost to the failed connect.
                    self.issue_closed(ci, now);
                }
                self.connect_failed(ci, now);
            }
        }
    }

    fn on_established(&mut self, ci: usize) {
        self.cc.established += 1;
        self.connecting_count -= 1;
        self.open_count += 1;
        let c = &mut self.conns[ci];
        if c.ever_open {
            self.cc.reconnected += 1;
        }
        c.ever_open = true;
        c.connect_failures = 0;
        c.state = State::Open;
        if c.wlen > c.written {
            self.flush(ci);
        } else if self.plan.open.is_some() {
            if !c.in_free {
                c.in_free = true;
                self.free.push(ci);
            }
        } else if self.started && c.in_flight == 0 {
            // Closed loop, connected after the start line (slow pre-connect): start working.
            self.issue_closed(ci, now_ns());
        }
    }

    fn connect_failed(&mut self, ci: usize, now: u64) {
        self.cc.failed += 1;
        self.connecting_count -= 1;
        let c = &mut self.conns[ci];
        c.connect_failures += 1;
        let backoff_ns = (10_000_000u64 << (c.connect_failures - 1).min(6)).min(500_000_000);
        self.drop_requests(ci, ErrorKind::Connect, now);
        let c = &mut self.conns[ci];
        c.reset_socket();
        c.state = State::Down {
            retry_at_ns: now + backoff_ns,
        };
        self.down.push(ci);
    }

    /// Count a connection's in-flight requests as failed with `kind`.
    fn drop_requests(&mut self, ci: usize, kind: ErrorKind, now: u64) {
        let c = &mut self.conns[ci];
        let n = c.in_flight as u64;
        c.in_flight = 0;
        self.in_flight_total -= n;
        if n > 0 && c.counted {
            self.rec.error(kind, n, now);
        }
    }

    /// Close an established connection; reconnect right away (no back-off: it worked).
    fn close_open(&mut self, ci: usize, now: u64) {
        let c = &mut self.conns[ci];
        if c.state == State::Open {
            self.open_count -= 1;
        } else if c.state == State::Connecting {
            self.connecting_count -= 1;
        }
        c.reset_socket();
        c.state = State::Down { retry_at_ns: now };
        self.down.push(ci);
    }

    fn fail_open(&mut self, ci: usize, kind: ErrorKind, now: u64) {
        self.drop_requests(ci, kind, now);
        self.close_open(ci, now);
    }

    /// Reconnect slots whose back-off expired; returns the next retry time.
    fn reconnect_due(&mut self, now: u64) -> u64 {
        let mut next = u64::MAX;
        let mut i = 0;
        while i < self.down.len() {
            let ci = self.down[i];
            match self.conns[ci].state {
                State::Down { retry_at_ns } if retry_at_ns <= now => {
                    self.down.swap_remove(i);
                    let closed = self.plan.open.is_none();
                    if closed && self.batch_size(now) == 0 {
                        self.conns[ci].state = State::Parked;
                        continue;
                    }
                    self.start_connect(ci, now, closed);
                }
                State::Down { retry_at_ns } => {
                    next = next.min(retry_at_ns);
                    i += 1;
                }
                _ => {
                    self.down.swap_remove(i);
                }
            }
        }
        next
    }

    fn scan_timeouts(&mut self, now: u64) {
        let timeout = self.plan.timeout_ns;
        for ci in 0..self.conns.len() {
            let c = &self.conns[ci];
            let (state, n, counted) = (c.state, c.in_flight as u64, c.counted);
            let (sent_ns, connect_ns) = (c.sent_ns, c.connect_started_ns);
            match state {
                State::Open | State::Connecting if n > 0 && now - sent_ns >= timeout => {
                    if counted {
                        self.rec.timeout(n, now);
                    }
                    self.conns[ci].in_flight = 0;
                    self.in_flight_total -= n;
                    if state == State::Connecting {
                        self.cc.failed += 1;
                    }
                    // HTTP/1.1 framing is lost once a response is abandoned: reopen.
                    self.close_open(ci, now);
                }
                State::Connecting if now - connect_ns >= timeout => {
                    self.connect_failed(ci, now);
                }
                _ => {}
            }
        }
    }

    fn close_all(&mut self, now: u64) {
        let mut in_flight = 0;
        for c in &mut self.conns {
            if c.counted {
                in_flight += c.in_flight as u64;
            }
            c.reset_socket();
        }
        self.rec.counts.in_flight_at_end = in_flight;
        if let Some(o) = self.plan.open {
            // Everything due before the end but never sent is backlog, not silently lost.
            let horizon = now.min(self.end_ns);
            while self.next_due_j < self.j_end
                && o.intended_ns(self.t0_ns, self.k_of(self.next_due_j)) < horizon
            {
                self.next_due_j += 1;
            }
            self.rec.counts.backlog_at_end = (self.next_send_j..self.next_due_j)
                .filter(|&j| self.k_of(j) >= o.k_window)
                .count() as u64;
        }
    }

    // ---- closed loop -------------------------------------------------------------------

    /// Requests the next closed-loop batch may carry (0 = budget spent).
    fn batch_size(&self, now: u64) -> u32 {
        match self.budget {
            Some(b) if now >= self.ws_ns => (self.plan.pipeline as u64).min(b) as u32,
            _ => self.plan.pipeline,
        }
    }

    /// Issue the next batch on slot `ci` (open or connecting) and write it if possible.
    fn issue_closed(&mut self, ci: usize, now: u64) {
        let n = self.batch_size(now);
        let c = &mut self.conns[ci];
        if n == 0 {
            return;
        }
        let counted = now >= self.ws_ns;
        if counted {
            if let Some(b) = &mut self.budget {
                *b -= n as u64;
            }
            self.rec.counts.sent += n as u64;
        }
        c.counted = counted;
        c.in_flight = n;
        c.sent_ns = now;
        c.intended_ns = now;
        c.wlen = self.plan.req.one_len * n as usize;
        c.written = 0;
        self.in_flight_total += n as u64;
        if c.state == State::Open {
            self.flush(ci);
        }
    }

    // ---- open loop ---------------------------------------------------------------------

    #[inline]
    fn k_of(&self, j: u64) -> u64 {
        self.share.index as u64 + j * self.plan.threads as u64
    }

    /// Send every due request to a free connection; returns when the next one is due.
    fn dispatch_open(&mut self) -> u64 {
        let o = self.plan.open.expect("open loop");
        let now = now_ns();
        while self.next_due_j < self.j_end
            && o.intended_ns(self.t0_ns, self.k_of(self.next_due_j)) <= now
        {
            self.next_due_j += 1;
        }
        while self.next_send_j < self.next_due_j {
            let Some(ci) = self.free.pop() else { break };
            let c = &mut self.conns[ci];
            c.in_free = false;
            if c.state != State::Open || c.in_flight > 0 {
                continue;
            }
            let j = self.next_send_j;
            self.next_send_j += 1;
            let k = self.k_of(j);
            let intended = o.intended_ns(self.t0_ns, k);
            let sent = now_ns();
            let counted = k >= o.k_window;
            let c = &mut self.conns[ci];
            c.counted = counted;
            c.in_flight = 1;
            c.sent_ns = sent;
            c.intended_ns = intended;
            c.wlen = self.plan.req.one_len;
            c.written = 0;
            self.in_flight_total += 1;
            if counted {
                self.rec.counts.sent += 1;
                let queued = j < self.queued_upto;
                self.rec.counts.queued += u64::from(queued);
                self.rec.send_lag(sent.saturating_sub(intended), queued);
            }
            self.flush(ci);
        }
        if self.next_send_j < self.next_due_j {
            // Still waiting for a connection: these requests queue (latency keeps counting
            // from their intended time); no need to wake for new due times meanwhile.
            self.queued_upto = self.next_due_j;
            return u64::MAX;
        }
        if self.next_due_j < self.j_end {
            o.intended_ns(self.t0_ns, self.k_of(self.next_due_j))
        } else {
            u64::MAX
        }
    }

    // ---- I/O ---------------------------------------------------------------------------

    fn flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        while c.written < c.wlen {
            match socket::send(c.fd, &self.plan.req.batch[c.written..c.wlen]) {
                Ok(n) => {
                    c.written += n;
                    if c.counted {
                        self.rec.bytes_written += n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = if is_reset(&e) {
                        ErrorKind::Reset
                    } else {
                        ErrorKind::Write
                    };
                    self.fail_open(ci, kind, now_ns());
                    return;
                }
            }
        }
    }

    fn read_ready(&mut self, ci: usize) {
        loop {
            let c = &mut self.conns[ci];
            if c.rend == c.rbuf.len() {
                if c.rstart > 0 {
                    c.rbuf.copy_within(c.rstart..c.rend, 0);
                    c.rend -= c.rstart;
                    c.rstart = 0;
                } else {
                    // A response head larger than the whole buffer.
                    self.fail_open(ci, ErrorKind::Parse, now_ns());
                    return;
                }
            }
            let space = c.rbuf.len() - c.rend;
            match socket::read(c.fd, &mut c.rbuf[c.rend..]) {
                Ok(0) => {
                    self.on_eof(ci, now_ns());
                    return;
                }
                Ok(n) => {
                    // One timestamp per read: every response completed by these bytes
                    // arrived together.
                    let now = now_ns();
                    if now >= self.end_ns {
                        // Past the window: leave these as in flight at the end.
                        self.stop = true;
                        return;
                    }
                    c.rend += n;
                    if c.counted {
                        self.rec.bytes_read += n as u64;
                    }
                    if !self.parse(ci, now) || n < space {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = if is_reset(&e) {
                        ErrorKind::Reset
                    } else {
                        ErrorKind::Read
                    };
                    self.fail_open(ci, kind, now_ns());
                    return;
                }
            }
        }
    }

    /// Parse every complete response in the buffer. Returns false if the connection closed.
    fn parse(&mut self, ci: usize, now: u64) -> bool {
        loop {
            let c = &mut self.conns[ci];
            if c.rstart == c.rend {
                c.rstart = 0;
                c.rend = 0;
                return true;
            }
            if c.in_flight == 0 {
                // Bytes nobody asked for: framing can no longer be trusted.
                self.unsolicited += 1;
                self.close_open(ci, now);
                return false;
            }
            match c.parser.feed(&c.rbuf[c.rstart..c.rend]) {
                Step::Done { consumed, response } => {
                    c.rstart += consumed;
                    if !self.on_response(ci, response, now) {
                        return false;
                    }
                }
                Step::More { consumed } => {
                    c.rstart += consumed;
                    if c.rstart == c.rend {
                        c.rstart = 0;
                        c.rend = 0;
                    } else if c.rstart > c.rbuf.len() / 2 {
                        c.rbuf.copy_within(c.rstart..c.rend, 0);
                        c.rend -= c.rstart;
                        c.rstart = 0;
                    }
                    return true;
                }
                Step::Error(_) => {
                    self.fail_open(ci, ErrorKind::Parse, now);
                    return false;
                }
            }
        }
    }

    fn on_eof(&mut self, ci: usize, now: u64) {
        if let Some(r) = self.conns[ci].parser.on_eof()
            && self.conns[ci].in_flight > 0
        {
            self.on_response(ci, r, now);
            return;
        }
        if self.conns[ci].in_flight > 0 {
            self.fail_open(ci, ErrorKind::Read, now);
        } else {
            // Server closed an idle keep-alive connection.
            self.close_open(ci, now);
        }
    }

    /// Record one response; returns false if the connection was closed.
    fn on_response(&mut self, ci: usize, r: Response, now: u64) -> bool {
        let c = &mut self.conns[ci];
        c.in_flight -= 1;
        self.in_flight_total -= 1;
        if c.counted {
            self.rec.response(&r, now, c.sent_ns, c.intended_ns);
        }
        if c.in_flight > 0 {
            if r.close {
                // Server closes with pipelined requests unanswered.
                self.fail_open(ci, ErrorKind::Read, now);
                return false;
            }
            return true;
        }
        if r.close || !self.plan.keepalive {
            self.close_open(ci, now);
            return false;
        }
        if self.plan.open.is_some() {
            let c = &mut self.conns[ci];
            if !c.in_free {
                c.in_free = true;
                self.free.push(ci);
            }
        } else {
            self.issue_closed(ci, now);
            if self.conns[ci].state != State::Open {
                return false;
            }
        }
        true
    }
}

fn is_reset(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ECONNRESET) | Some(libc::EPIPE))
}
