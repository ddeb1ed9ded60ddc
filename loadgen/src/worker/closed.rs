//! Closed loop: each connection re-issues its next batch as soon as the previous completed,
//! within the request budget.

use super::Worker;
use super::conn::State;

impl Worker {
    /// Requests the next closed-loop batch may carry (0 = budget spent).
    pub(super) fn batch_size(&self, now: u64) -> u32 {
        match self.budget {
            Some(b) if now >= self.ws_ns => (self.plan.pipeline as u64).min(b) as u32,
            _ => self.plan.pipeline,
        }
    }

    /// Issue the next batch on slot `ci` (open or connecting) and write it if possible.
    pub(super) fn issue_closed(&mut self, ci: usize, now: u64) {
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
}
