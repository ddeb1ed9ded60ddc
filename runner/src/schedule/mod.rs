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
use crate::results::outcome::RepOutcome;
use crate::results::schema::{CellFlamegraph, CellResult, CellSpec, CellStatus, Drift};
use crate::results::store::{Store, finished};
use crate::results::summary::summarize_cell;

/// How repetitions are run: on this machine and its hosts (`cell`), or by a fake in tests.
/// A runner returns values; the schedule alone writes them into the cells.
pub trait RepRunner {
    /// One repetition of `cell` (`rep` 0: a drift re-run): a measured one, or a churn one
    /// for a churn cell.
    fn rep(&mut self, cell: &CellSpec, rep: u32) -> RepOutcome;
    /// The extra profiled repetition of a completed cell (`--flamegraph`); None when the run
    /// does not profile.
    fn profiled_rep(&mut self, cell: &CellSpec, progress: &Progress) -> Option<CellFlamegraph>;
    /// The pause between repetitions; false when the run was interrupted meanwhile.
    fn cool_down(&mut self, ms: u64) -> bool;
    /// `--fake-reps`: the run whose recorded repetitions these are (each cell says so).
    fn replay_of(&self) -> Option<&str> {
        None
    }
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
        session: crate::sample::now_unix_us(),
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
            series.extend(drift::point(plan, i + 1, g.runner, g.progress));
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
    /// This process's start (Unix µs), recorded on every repetition it runs: pairing on rounds
    /// holds only between repetitions of one session (`RepResult::session`).
    session: u64,
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
                None => states.push(CellResult {
                    replay_of: self.runner.replay_of().map(str::to_owned),
                    ..CellResult::new(self.run_id, c)
                }),
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
            if let Some(fg) = self.runner.profiled_rep(&st.cell, self.progress) {
                st.flamegraph = Some(fg);
            }
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
        self.progress.begin(&st.cell, rep);
        let mut o = self.runner.rep(&st.cell, rep);
        // A replay keeps what was recorded: its repetitions ran when the recorded run ran them.
        if self.runner.replay_of().is_none()
            && let Some(crate::results::outcome::RepBody::Measured(r)) = &mut o.body
        {
            r.session = Some(self.session);
        }
        let failure = o.failure.as_ref().map(ToString::to_string);
        match o.churn() {
            Some(c) => self.progress.end_with(&st.cell, rep, &churn_line(c)),
            None => self
                .progress
                .end(&st.cell, rep, o.measured(), failure.as_deref()),
        }
        let ok = o.failure.is_none();
        st.record(o);
        let left = u64::from(st.cell.max_repetitions().saturating_sub(rep));
        if !ok {
            self.progress.skip(left);
        } else if st.cell.churn.is_some() {
            if rep == st.cell.repetitions {
                st.status = CellStatus::Ok;
            }
        } else if let Some(stopped) = adaptive::enough(st).filter(|_| !self.together) {
            st.status = CellStatus::Ok;
            self.progress.skip(left);
            st.stopped = stopped;
        }
        st.summary = summarize_cell(st);
    }
}

/// A churn repetition's progress line: RSS before and after each cycle's close, failures.
fn churn_line(r: &crate::results::churn::ChurnRep) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    let mib = |b: Option<u64>| b.map_or("?".into(), |b| format!("{:.1}", b as f64 / MIB));
    let closed: Vec<String> = r.cycles.iter().map(|c| mib(c.rss_closed_bytes)).collect();
    let failed: u32 = r.cycles.iter().map(|c| c.failed).sum();
    format!(
        "churn RSS {} → [{}] MiB after closing, {failed} connections failed",
        mib(r.rss_before_bytes),
        closed.join(", ")
    )
}

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;
