//! One repetition as a value, and the one place it is written into its cell. A runner (on
//! this machine, on a host's agent, a churn or a profiled one) returns a [`RepOutcome`]: the
//! starts it made, what they told, what it measured and why it failed; only the schedule
//! records it ([`CellResult::record`]), so a cell has one writer.

use ping_common::startup::StartupLine;
use serde::{Deserialize, Serialize};

use super::churn::ChurnRep;
use super::schema::{
    AppliedLimits, CellResult, CellStatus, EndpointCheck, RepResult, Stage, StageError, StartRecord,
};

/// What a start told about the service, whether or not it passed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StartOutcome {
    pub limits: Option<AppliedLimits>,
    pub startup_line: Option<StartupLine>,
    pub verification: Vec<EndpointCheck>,
}

/// What a repetition measured.
#[derive(Debug, Clone)]
pub enum RepBody {
    /// A load and its measurements.
    Measured(Box<RepResult>),
    /// Connection-churn cycles; kept also when the repetition ended partway (`partial`).
    Churn(ChurnRep),
}

/// One repetition's outcome, as its runner returns it.
#[derive(Debug, Clone, Default)]
pub struct RepOutcome {
    /// The starts it made, each stopped, in order.
    pub starts: Vec<StartRecord>,
    /// What each start told (limits, start-up line, verification).
    pub told: Vec<StartOutcome>,
    pub body: Option<RepBody>,
    /// Why it failed and at which stage (`Interrupted` when the run was).
    pub failure: Option<StageError>,
}

impl RepOutcome {
    /// The outcome of a repetition that failed before it started anything.
    pub fn failed(e: StageError) -> RepOutcome {
        RepOutcome {
            failure: Some(e),
            ..Default::default()
        }
    }

    /// The measured repetition, if there is one.
    pub fn measured(&self) -> Option<&RepResult> {
        match &self.body {
            Some(RepBody::Measured(r)) => Some(r),
            _ => None,
        }
    }

    /// The churn repetition, if it completed.
    pub fn churn(&self) -> Option<&ChurnRep> {
        match &self.body {
            Some(RepBody::Churn(c)) if self.failure.is_none() => Some(c),
            _ => None,
        }
    }

    /// Ends the outcome with `r`: its body, or its failure.
    pub fn with(mut self, r: Result<RepBody, StageError>) -> RepOutcome {
        match r {
            Ok(b) => self.body = Some(b),
            Err(e) => self.failure = Some(e),
        }
        self
    }
}

impl CellResult {
    /// Records one repetition: its starts and what they told, its body, and its failure
    /// (the cell fails; a confinement the machine cannot apply makes it unsupported, an
    /// interrupt interrupted).
    pub fn record(&mut self, o: RepOutcome) {
        for t in &o.told {
            self.record_start(t);
        }
        self.starts.extend(o.starts);
        match o.body {
            Some(RepBody::Measured(r)) => self.reps.push(*r),
            Some(RepBody::Churn(c)) => self.churn.push(c),
            None => {}
        }
        if let Some(e) = o.failure {
            self.status = match e.stage {
                Stage::Interrupted => CellStatus::Interrupted,
                Stage::Limits => CellStatus::Unsupported,
                _ => CellStatus::Failed,
            };
            self.failure = Some(e);
        }
    }

    /// Folds what one start told into the cell: the limits and the start-up line of the
    /// first start that had them, and the verification of the first start — or of any
    /// later start that failed it, so the failing checks are the ones kept.
    fn record_start(&mut self, o: &StartOutcome) {
        if self.limits.is_none() {
            self.limits.clone_from(&o.limits);
        }
        if self.startup_line.is_none() {
            self.startup_line.clone_from(&o.startup_line);
        }
        let failed = o.verification.iter().any(|c| !c.passed);
        if self.verification.is_empty() || failed {
            self.verification.clone_from(&o.verification);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fixture;

    fn check(path: &str, passed: bool) -> EndpointCheck {
        EndpointCheck {
            path: path.into(),
            passed,
            status: Some(200),
            problems: vec![],
            headers: Default::default(),
            body_bytes: None,
            latency_us: None,
        }
    }

    #[test]
    fn a_repetition_is_recorded_whole_and_its_failure_sets_the_status() {
        let mut cell = fixture::cell_with_rps("s", &[1.0, 2.0]);
        let (reps, starts) = (cell.reps.len(), cell.starts.len());
        let rep = cell.reps[0].clone();
        let start = cell.starts[0].clone();
        cell.verification = vec![check("a", true)];
        let ok = RepOutcome {
            starts: vec![start],
            told: vec![StartOutcome {
                verification: vec![check("b", true)],
                ..Default::default()
            }],
            body: Some(RepBody::Measured(Box::new(rep))),
            failure: None,
        };
        cell.record(ok);
        assert_eq!((cell.reps.len(), cell.starts.len()), (reps + 1, starts + 1));
        assert_eq!(
            cell.verification[0].path, "a",
            "a passing check keeps the first"
        );
        let failed_check = StartOutcome {
            verification: vec![check("c", false)],
            ..Default::default()
        };
        for (stage, status) in [
            (Stage::Load, CellStatus::Failed),
            (Stage::Limits, CellStatus::Unsupported),
            (Stage::Interrupted, CellStatus::Interrupted),
        ] {
            let mut o = RepOutcome::failed(StageError::at(stage, "why"));
            o.told.push(failed_check.clone());
            cell.record(o);
            assert_eq!(cell.status, status);
            assert_eq!(cell.reps.len(), reps + 1, "a failure adds no repetition");
        }
        assert_eq!(
            cell.verification[0].path, "c",
            "a failing check is the one kept"
        );
    }
}
