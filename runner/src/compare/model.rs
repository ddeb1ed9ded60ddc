//! The result of a comparison, as data: what the exporters render and `--format json`
//! serializes.

use serde::Serialize;

use super::matching::CellId;
use crate::results::difference::{Difference, Verdict};
use crate::results::metric::{Metric, MetricValues, Unit};

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub old: Side,
    pub new: Side,
    /// How the intervals were computed, in one sentence.
    pub method: String,
    pub noise_pct: f64,
    /// `--force` was given and the runs (or some cells) are not comparable.
    pub forced: bool,
    /// Run-level reasons the runs are not comparable (only non-empty when forced).
    pub incomparable: Vec<String>,
    pub only_old: Vec<CellId>,
    pub only_new: Vec<CellId>,
    pub cells: Vec<CellComparison>,
    /// A run drifted by more than the smallest MDE of the metric: verdicts between the runs
    /// may be the machine moving.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Some cell compared instructions/request (both sides counted them).
pub fn instructions_compared(cells: &[CellComparison]) -> bool {
    cells.iter().any(|c| {
        c.metrics
            .iter()
            .any(|m| m.metric == Metric::InstructionsPerRequest && m.difference.is_some())
    })
}

/// One side's identity, for the header.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub label: String,
    pub run_id: String,
    pub cpu_model: Option<String>,
    pub logical_cpus: Option<usize>,
    pub loadgen_version: Option<String>,
    pub git_commit: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CellComparison {
    pub id: CellId,
    pub key: String,
    /// Suspect cells are marked, never hidden.
    pub suspect_old: bool,
    pub suspect_new: bool,
    pub suspect_reasons: Vec<String>,
    /// Failed / unsupported / interrupted cells, per side ("old: verify: ..."): their
    /// metrics are missing, which must not read as "no change".
    pub failures: Vec<String>,
    /// Why this cell's two sides were run differently (verdicts withheld unless forced).
    pub not_comparable: Vec<String>,
    pub metrics: Vec<MetricComparison>,
    /// Where instructions per request moved: the functions that changed most, where both
    /// sides counted them per function.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<crate::results::attribution::FunctionDelta>,
    /// The new side did not complete (failed, unsupported, interrupted): the gate's concern.
    #[serde(skip)]
    pub new_incomplete: bool,
    /// At a fixed offered rate, where req/s is set by the generator, not measured.
    #[serde(skip)]
    pub open_loop: bool,
}

impl CellComparison {
    pub fn suspect(&self) -> bool {
        self.suspect_old || self.suspect_new
    }

    /// A metric measured on both sides got no interval, so no verdict can be given on it.
    pub fn unjudged(&self) -> bool {
        self.metrics
            .iter()
            .any(|m| m.verdict == crate::results::difference::Verdict::Undetermined)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct MetricComparison {
    pub metric: Metric,
    pub unit: Unit,
    pub old: Option<MetricValues>,
    pub new: Option<MetricValues>,
    pub difference: Option<Difference>,
    pub verdict: Verdict,
    /// The smallest difference (percent) this comparison detects with 95 % confidence and
    /// 80 % power, and where the spread it is computed from came from.
    pub mde_pct: Option<f64>,
    pub mde_source: Option<MdeSource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MdeSource {
    /// The runs' `[calibration]` (the larger of the two).
    Calibration,
    /// The two sides' own spread over their repetitions.
    Spread,
}

impl Comparison {
    /// Worse verdicts whose change is at least `pct` percent: what `--fail-on-regression`
    /// fails on.
    pub fn regressions(&self, pct: f64) -> Vec<(&CellComparison, &MetricComparison)> {
        self.cells
            .iter()
            .flat_map(|c| c.metrics.iter().map(move |m| (c, m)))
            .filter(|(_, m)| {
                m.verdict == Verdict::Worse
                    && m.difference
                        .as_ref()
                        .is_some_and(|d| d.change_pct.abs() >= pct)
            })
            .collect()
    }

    /// Why the new run cannot be judged as a whole: cells that failed or are missing in it,
    /// no cells at all, or cells run differently (unless forced). `--fail-on-regression`
    /// fails on these too, unless told to ignore them.
    pub fn gaps(&self) -> Vec<String> {
        let mut g = Vec::new();
        if self.cells.is_empty() {
            g.push("no cell of the new run matches a cell of the old run".to_string());
        }
        let failed: Vec<&str> = self
            .cells
            .iter()
            .filter(|c| c.new_incomplete)
            .map(|c| c.key.as_str())
            .collect();
        if !failed.is_empty() {
            g.push(format!(
                "{} cell(s) did not complete in the new run: {}",
                failed.len(),
                failed.join(", ")
            ));
        }
        let unjudged: Vec<&str> = self
            .cells
            .iter()
            .filter(|c| !c.new_incomplete && c.unjudged())
            .map(|c| c.key.as_str())
            .collect();
        if !unjudged.is_empty() {
            g.push(format!(
                "{} cell(s) cannot be judged (a metric without CI: fewer than 2 repetitions \
                 on a side): {}",
                unjudged.len(),
                unjudged.join(", ")
            ));
        }
        if !self.only_old.is_empty() {
            g.push(format!(
                "{} cell(s) of the old run are missing from the new run",
                self.only_old.len()
            ));
        }
        g
    }

    /// Cells whose two sides were run differently and got no verdict (not forced).
    pub fn withheld(&self) -> Vec<&CellComparison> {
        self.cells
            .iter()
            .filter(|c| !c.not_comparable.is_empty() && !self.forced)
            .collect()
    }

    pub fn count(&self, v: Verdict) -> usize {
        self.cells
            .iter()
            .flat_map(|c| &c.metrics)
            .filter(|m| m.verdict == v)
            .count()
    }
}
