//! The scheduling policy of a run, apart from how one repetition is run: calibration groups
//! first, then the matrix groups; within a group the cells' repetitions interleaved (rep 1
//! of each, then rep 2 …) so drift of the machine hits every service alike; adaptive cells
//! stopped once they have enough; the reference cell re-run at the drift points; the extra
//! profiled repetition; resume (cells an earlier run finished are skipped). Repetitions come
//! through [`RepRunner`], so the policy is tested over a fake runner in milliseconds.

mod drift;

use crate::interrupt;
use crate::plan::Plan;
use crate::progress::Progress;
use crate::results::adaptive;
use crate::results::schema::{CellResult, CellSpec, CellStatus, Drift, RepResult};
use crate::results::store::{Store, finished};
use crate::results::summary::summarize_cell;

/// How repetitions are run: on this machine (`cmd::run`), or by a fake in tests.
pub trait RepRunner {
    /// One measured repetition of `st`'s cell (`rep` 0: a drift re-run); None when it
    /// failed, the failure recorded on `st`.
    fn rep(&mut self, st: &mut CellResult, rep: u32) -> Option<RepResult>;
    /// One connection-churn repetition, recorded on `st` with its progress line.
    fn churn_rep(&mut self, st: &mut CellResult, rep: u32, progress: &mut Progress);
    /// The extra profiled repetition (`--flamegraph`), recorded on `st`.
    fn profiled_rep(&mut self, st: &mut CellResult, progress: &Progress);
    /// The pause between repetitions; false when the run was interrupted meanwhile.
    fn cool_down(&mut self, ms: u64) -> bool;
}

/// What the schedule leaves for the end of the run.
pub struct Outcome {
    /// False when interrupted: cells in flight are already written with their status.
    pub completed: bool,
    pub drift: Option<Drift>,
}

/// Runs `plan` into `store`: every cell file is rewritten after each repetition.
/// `profile`: one extra profiled repetition per completed cell of the matrix groups.
pub fn run(
    plan: &Plan,
    store: &Store,
    run_id: &str,
    profile: bool,
    runner: &mut dyn RepRunner,
    progress: &mut Progress,
) -> anyhow::Result<Outcome> {
    let mut series = Vec::new();
    let drift_after = plan.drift_after();
    let mut completed = true;
    let mut g = Group {
        store,
        run_id,
        runner,
        progress,
        together: true,
    };
    for group in &plan.calibration {
        completed = g.run(group, false)?;
        if !completed {
            break;
        }
    }
    g.together = false;
    for (i, group) in plan.groups.iter().enumerate() {
        if !completed || !g.run(group, profile)? {
            completed = false;
            break;
        }
        if drift_after.contains(&(i + 1)) {
            series.extend(drift::point(plan, run_id, i + 1, g.runner, g.progress));
        }
    }
    Ok(Outcome {
        completed: completed && !interrupt::requested(),
        drift: drift::record(store, plan, series),
    })
}

struct Group<'a> {
    store: &'a Store,
    run_id: &'a str,
    runner: &'a mut dyn RepRunner,
    progress: &'a mut Progress,
    /// The group's cells stop repeating together, when every one has had enough (the two
    /// arms of a calibration cell: pairs A B A B, none left over).
    together: bool,
}

impl Group<'_> {
    /// One group's cells, repetitions interleaved; then, with `profile`, the profiled
    /// repetitions. False when interrupted.
    fn run(&mut self, group: &[CellSpec], profile: bool) -> anyhow::Result<bool> {
        let mut states: Vec<CellResult> = Vec::new();
        for c in group {
            match self.store.read_cell(&c.key).filter(finished) {
                Some(done) => {
                    self.progress.skip(u64::from(c.max_repetitions()));
                    // Its measured repetitions are kept; a missing profiled one still runs.
                    if profile && done.status == CellStatus::Ok && done.flamegraph.is_none() {
                        states.push(done);
                    }
                }
                None => states.push(CellResult::new(self.run_id, c)),
            }
        }
        // Adaptive cells may stop early: a round runs every cell still repeating.
        let reps = group
            .iter()
            .map(CellSpec::max_repetitions)
            .max()
            .unwrap_or(0);
        for rep in 1..=reps {
            for st in states.iter_mut() {
                if interrupt::requested() {
                    return Ok(false);
                }
                if st.status != CellStatus::Partial || rep > st.cell.max_repetitions() {
                    continue;
                }
                self.rep(st, rep);
                self.store.write_cell(st)?;
                if !self.runner.cool_down(st.cell.cooldown_ms) {
                    return Ok(false);
                }
            }
            if self.together {
                self.stop_together(&mut states, rep)?;
            }
        }
        if profile {
            return self.profiled(&mut states);
        }
        Ok(true)
    }

    /// The extra, profiled repetition of every cell of the group that completed.
    fn profiled(&mut self, states: &mut [CellResult]) -> anyhow::Result<bool> {
        for st in states.iter_mut() {
            if interrupt::requested() {
                return Ok(false);
            }
            if st.status != CellStatus::Ok || st.flamegraph.is_some() {
                continue;
            }
            self.runner.profiled_rep(st, self.progress);
            self.store.write_cell(st)?;
            if !self.runner.cool_down(st.cell.cooldown_ms) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// After round `rep` of a `together` group: when every cell still repeating has had
    /// enough, all of them stop, each with its own record of why.
    fn stop_together(&mut self, states: &mut [CellResult], rep: u32) -> anyhow::Result<()> {
        let going: Vec<usize> = (0..states.len())
            .filter(|&i| states[i].status == CellStatus::Partial)
            .collect();
        let stops: Option<Vec<_>> = going
            .iter()
            .map(|&i| adaptive::enough(&states[i]))
            .collect();
        for (i, stopped) in going.into_iter().zip(stops.into_iter().flatten()) {
            let st = &mut states[i];
            st.status = CellStatus::Ok;
            st.stopped = stopped;
            self.progress
                .skip(u64::from(st.cell.max_repetitions().saturating_sub(rep)));
            st.summary = summarize_cell(st);
            self.store.write_cell(st)?;
        }
        Ok(())
    }

    /// One repetition of one cell, recorded on it with its progress line; an adaptive cell
    /// that has enough stops here (in a `together` group, at the end of the round).
    fn rep(&mut self, st: &mut CellResult, rep: u32) {
        if st.cell.churn.is_some() {
            return self.runner.churn_rep(st, rep, self.progress);
        }
        self.progress.begin(&st.cell, rep);
        let r = self.runner.rep(st, rep);
        let failure = st.failure.as_ref().map(ToString::to_string);
        self.progress
            .end(&st.cell, rep, r.as_ref(), failure.as_deref());
        let left = u64::from(st.cell.max_repetitions().saturating_sub(rep));
        if let Some(r) = r {
            st.reps.push(r);
            if let Some(stopped) = adaptive::enough(st).filter(|_| !self.together) {
                st.status = CellStatus::Ok;
                self.progress.skip(left);
                st.stopped = stopped;
            }
        } else {
            self.progress.skip(left);
        }
        st.summary = summarize_cell(st);
    }
}

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
