//! Open loop: the thread's share of one global schedule `t0 + k/rate`, dispatched to idle
//! connections; requests that find none wait in an implicit queue (a range of indices).

use super::Worker;
use super::conn::State;
use crate::http::response::Sent;
use crate::sys::clock::now_ns;

impl Worker {
    #[inline]
    pub(super) fn k_of(&self, j: u64) -> u64 {
        self.share.index as u64 + j * self.plan.threads as u64
    }

    /// Offer idle slot `ci` to the dispatcher; a slot sits in the free list at most once.
    pub(super) fn mark_free(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if !c.in_free {
            c.in_free = true;
            self.free.push(ci);
        }
    }

    /// Send every due request to a free connection; returns when the next one is due.
    pub(super) fn dispatch_open(&mut self) -> u64 {
        let o = self.plan.open.expect("open loop");
        let now = now_ns();
        let (index, threads) = (self.share.index, self.plan.threads);
        let due = o.due_slots(self.t0_ns, now, index, threads).min(self.j_end);
        self.next_due_j = self.next_due_j.max(due);
        if self.next_send_j < self.queued_upto {
            // Still backlogged from the last pass: everything due meanwhile waited for a
            // connection too (nobody woke for it), so it is queued, not generator lateness.
            self.queued_upto = self.next_due_j;
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
            c.intended_ns = intended;
            c.issue(
                1,
                &self.plan.req,
                Sent {
                    at_ns: sent,
                    counted,
                },
            );
            self.in_flight_total += 1;
            if counted {
                self.rec.counts.sent += 1;
                let queued = j < self.queued_upto;
                self.rec.counts.queued += u64::from(queued);
                let lag = sent.saturating_sub(intended);
                // Late past both its due time and the end of the last wait, the thread was
                // not running: its wake-up's lateness, not its own work.
                let woken_late = self.woke_ns.saturating_sub(intended.max(self.asked_ns));
                self.rec.send_lag(lag, woken_late.min(lag), queued);
            }
            self.flush(ci);
        }
        self.backlogged = self.next_send_j < self.next_due_j;
        if self.backlogged {
            // Still waiting for a connection: these requests queue (latency keeps counting
            // from their intended time); no need to wake for new due times meanwhile.
            self.queued_upto = self.next_due_j;
            return u64::MAX;
        }
        if self.next_due_j < self.j_end {
            // Wake once for every send due within `coalesce_ns` of the next one (the earlier
            // ones go up to that late; their send lag records it).
            let first = o.intended_ns(self.t0_ns, self.k_of(self.next_due_j));
            let mut j = self.next_due_j;
            while j + 1 < self.j_end
                && o.intended_ns(self.t0_ns, self.k_of(j + 1)) <= first + o.coalesce_ns
            {
                j += 1;
            }
            o.intended_ns(self.t0_ns, self.k_of(j))
        } else {
            // All sent: wake when the schedule (and so the window) ends.
            o.end_ns(self.t0_ns)
        }
    }

    /// Open loop: due at the window's end but never sent (the window boundary aside).
    pub(super) fn count_backlog(&mut self, now: u64) {
        let o = self.plan.open.expect("open loop");
        let (index, threads) = (self.share.index, self.plan.threads);
        // Due strictly before the end counts; a request due at the end is the next window's.
        let horizon = now.min(self.end_ns).saturating_sub(1);
        let due = o
            .due_slots(self.t0_ns, horizon, index, threads)
            .min(self.j_end);
        self.next_due_j = self.next_due_j.max(due);
        let first = self.next_send_j.max(o.first_window_slot(index, threads));
        self.rec.counts.backlog_at_end = self.next_due_j.saturating_sub(first);
    }
}
