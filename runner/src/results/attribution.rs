//! Where a change in instructions per request went: two cells' per-function counts
//! (`counted.instruction_functions`) differenced function by function, largest change first.

use serde::Serialize;

use super::schema::{CellSummary, FunctionCost};

/// Changes smaller than this many instructions per request are left out (each side's table
/// leaves out functions under [`super::schema::FUNCTION_MIN_PER_REQUEST`], so a smaller
/// difference may be that cut).
pub const MIN_DELTA: f64 = 0.5;

/// One function's instructions per request on both sides and the change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionDelta {
    pub function: String,
    #[serde(rename = "crate")]
    pub krate: String,
    pub old: f64,
    pub new: f64,
    pub delta: f64,
}

fn functions(c: &CellSummary) -> &[FunctionCost] {
    c.counted
        .as_ref()
        .map_or(&[], |k| k.instruction_functions.as_slice())
}

/// The functions whose instructions per request moved by [`MIN_DELTA`] or more between
/// `old` and `new`, largest change first; empty when either side counted no functions.
pub fn diff(old: &CellSummary, new: &CellSummary) -> Vec<FunctionDelta> {
    let (o, n) = (functions(old), functions(new));
    if o.is_empty() || n.is_empty() {
        return vec![];
    }
    let per = |side: &[FunctionCost], name: &str| {
        side.iter()
            .find(|f| f.function == name)
            .map_or(0.0, |f| f.per_request)
    };
    let mut names: Vec<&FunctionCost> = o.iter().collect();
    names.extend(
        n.iter()
            .filter(|f| !o.iter().any(|x| x.function == f.function)),
    );
    let mut out: Vec<FunctionDelta> = names
        .into_iter()
        .map(|f| {
            let (a, b) = (per(o, &f.function), per(n, &f.function));
            FunctionDelta {
                function: f.function.clone(),
                krate: f.krate.clone(),
                old: a,
                new: b,
                delta: b - a,
            }
        })
        .filter(|d| d.delta.abs() >= MIN_DELTA)
        .collect();
    out.sort_by(|a, b| {
        b.delta
            .abs()
            .total_cmp(&a.delta.abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::CountedSummary;

    fn cell(fns: &[(&str, f64)]) -> CellSummary {
        CellSummary {
            counted: Some(CountedSummary {
                instruction_functions: fns
                    .iter()
                    .map(|(f, v)| FunctionCost {
                        function: f.to_string(),
                        krate: "k".into(),
                        per_request: *v,
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn functions_that_moved_largest_first_new_and_gone_ones_against_zero() {
        let old = cell(&[("parse", 300.0), ("serve", 900.0), ("gone", 12.0)]);
        let new = cell(&[("parse", 310.0), ("serve", 900.3), ("_int_free", 64.0)]);
        let all = diff(&old, &new);
        let d: Vec<(&str, f64)> = all.iter().map(|d| (d.function.as_str(), d.delta)).collect();
        assert_eq!(d, [("_int_free", 64.0), ("gone", -12.0), ("parse", 10.0)]);
        assert!(
            diff(&old, &cell(&[])).is_empty(),
            "a side without functions"
        );
    }
}
