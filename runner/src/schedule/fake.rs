//! A fake repetition runner for the policy's tests: it records every call in order and
//! answers with the req/s it is given per cell, without starting anything.

use std::collections::BTreeMap;

use super::RepRunner;
use crate::progress::Progress;
use crate::results::schema::{CellResult, CellStatus, RepResult, Stage, StageError};
use crate::results::suspect::tests as suspect_tests;

#[derive(Default)]
pub struct Fake {
    /// (cell key, repetition) in the order they ran; profiled repetitions as rep `u32::MAX`.
    pub calls: Vec<(String, u32)>,
    /// req/s by cell key, one value per call (cycled); a cell not listed fails every time.
    pub rps: BTreeMap<String, Vec<f64>>,
    pub cool_downs: u32,
}

impl Fake {
    pub fn keys(&self) -> Vec<String> {
        self.calls.iter().map(|(k, r)| format!("{k}#{r}")).collect()
    }
}

impl RepRunner for Fake {
    fn rep(&mut self, st: &mut CellResult, rep: u32) -> Option<RepResult> {
        let key = st.cell.key.clone();
        let nth = self.calls.iter().filter(|(k, _)| *k == key).count();
        self.calls.push((key.clone(), rep));
        let Some(values) = self.rps.get(&key) else {
            st.status = CellStatus::Failed;
            st.failure = Some(StageError {
                stage: Stage::Load,
                reason: "fake failure".into(),
                stderr_tail: None,
                host_lost: false,
            });
            return None;
        };
        Some(suspect_tests::rep(
            &st.cell,
            rep,
            values[nth % values.len()],
            100.0,
        ))
    }

    fn churn_rep(&mut self, st: &mut CellResult, rep: u32, _: &mut Progress) {
        self.calls.push((st.cell.key.clone(), rep));
    }

    fn profiled_rep(&mut self, st: &mut CellResult, _: &Progress) {
        self.calls.push((st.cell.key.clone(), u32::MAX));
    }

    fn cool_down(&mut self, _ms: u64) -> bool {
        self.cool_downs += 1;
        true
    }
}
