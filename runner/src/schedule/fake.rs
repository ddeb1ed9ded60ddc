//! A fake repetition runner for the policy's tests: it records every call in order and
//! answers with the req/s it is given per cell, without starting anything.

use std::collections::BTreeMap;

use super::RepRunner;
use crate::progress::Progress;
use crate::results::outcome::{RepBody, RepOutcome};
use crate::results::schema::{CellFlamegraph, CellSpec, Stage, StageError};
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
    fn rep(&mut self, cell: &CellSpec, rep: u32) -> RepOutcome {
        let key = cell.key.clone();
        let nth = self.calls.iter().filter(|(k, _)| *k == key).count();
        self.calls.push((key.clone(), rep));
        if cell.churn.is_some() {
            return RepOutcome::default();
        }
        let Some(values) = self.rps.get(&key) else {
            return RepOutcome::failed(StageError::at(Stage::Load, "fake failure"));
        };
        RepOutcome {
            body: Some(RepBody::Measured(Box::new(suspect_tests::rep(
                cell,
                rep,
                values[nth % values.len()],
                100.0,
            )))),
            ..Default::default()
        }
    }

    fn profiled_rep(&mut self, cell: &CellSpec, _: &Progress) -> Option<CellFlamegraph> {
        self.calls.push((cell.key.clone(), u32::MAX));
        None
    }

    fn cool_down(&mut self, _ms: u64) -> bool {
        self.cool_downs += 1;
        true
    }
}
