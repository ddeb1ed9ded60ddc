//! Closed loop: each connection re-issues its next batch as soon as the previous completed,
//! within the request budget.

use super::Worker;
use super::conn::State;
use crate::http::response::Sent;

impl Worker {
    /// Requests the next closed-loop batch may carry with `in_flight` already on its
    /// connection (0 = budget spent, or the connection full).
    pub(super) fn batch_size(&self, now: u64, in_flight: u32) -> u32 {
        let room = self.plan.pipeline.saturating_sub(in_flight);
        match self.budget {
            Some(b) if now >= self.ws_ns => (room as u64).min(b) as u32,
            _ => room,
        }
    }

    /// Issue the next batch on slot `ci` (open or connecting) and write it if possible: the
    /// whole pipeline on HTTP/1.1 (nothing is in flight), on h2c the streams that completed
    /// since (each stream is its own closed loop, as `h2load -m` keeps them).
    pub(super) fn issue_closed(&mut self, ci: usize, now: u64) {
        let n = self.batch_size(now, self.conns[ci].in_flight);
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
        c.intended_ns = now;
        c.issue(
            n,
            &self.plan.req,
            Sent {
                at_ns: now,
                counted,
            },
        );
        self.in_flight_total += n as u64;
        if c.state == State::Open {
            self.flush(ci);
        }
    }
}
