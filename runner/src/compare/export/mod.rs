//! Renderers of a `Comparison`: terminal table, Markdown, JSON. They return Strings and
//! never touch files; the command decides where the text goes.

pub mod json;
pub mod markdown;
pub mod terminal;

use super::model::{
    CellComparison, Comparison, MdeSource, MetricComparison, instructions_compared,
};
use crate::results::difference::{self, Verdict};
use crate::results::metric::Metric;
use crate::results::units::value;

pub fn side_value(m: &MetricComparison, old: bool) -> String {
    let s = if old { &m.old } else { &m.new };
    s.as_ref()
        .map_or_else(|| "–".into(), |s| value(m.unit, s.mean))
}

pub fn ratio(m: &MetricComparison) -> String {
    m.difference
        .as_ref()
        .map_or_else(|| "–".into(), |d| format!("{:.3}", d.ratio))
}

/// "-10.0 % [-11.1, -8.9]", or "-10.0 % [no CI]"; counts to two decimals ("+0.32 % [+0.31,
/// +0.34]": they resolve changes a tenth of a percent hides).
pub fn change(m: &MetricComparison) -> String {
    let Some(d) = &m.difference else {
        return "–".into();
    };
    let p = if m.unit == crate::results::metric::Unit::Count {
        2
    } else {
        1
    };
    match (d.ci95_low_pct, d.ci95_high_pct) {
        (Some(lo), Some(hi)) => format!("{:+.p$} % [{lo:+.p$}, {hi:+.p$}]", d.change_pct),
        _ => format!("{:+.p$} % [no CI]", d.change_pct),
    }
}

/// "6.2 %" from the runs' calibration, "~9.8 %" from the two sides' own spread.
pub fn mde(m: &MetricComparison) -> String {
    match (m.mde_pct, m.mde_source) {
        (Some(x), Some(MdeSource::Spread)) => format!("~{x:.1} %"),
        (Some(x), _) => format!("{x:.1} %"),
        _ => "–".into(),
    }
}

/// A metric row's cells, the same in every table syntax: metric, old, new, new/old,
/// change [95 % CI], MDE.
pub fn columns(m: &MetricComparison) -> [String; 6] {
    [
        m.metric.label().to_string(),
        side_value(m, true),
        side_value(m, false),
        ratio(m),
        change(m),
        mde(m),
    ]
}

/// Rows of the functions shown for a cell whose instructions moved.
pub const FUNCTIONS_SHOWN: usize = 10;

/// A cell's per-function rows: function, crate, old, new, Δ per request; and the line under
/// them (what they add up to against the total's change).
pub fn function_rows(c: &CellComparison) -> Option<(Vec<[String; 5]>, String)> {
    if c.functions.is_empty() {
        return None;
    }
    let shown = &c.functions[..c.functions.len().min(FUNCTIONS_SHOWN)];
    let rows = shown
        .iter()
        .map(|f| {
            [
                crate::results::untrusted::visible(&f.function).into_owned(),
                crate::results::untrusted::visible(&f.krate).into_owned(),
                format!("{:.1}", f.old),
                format!("{:.1}", f.new),
                format!("{:+.1}", f.delta),
            ]
        })
        .collect();
    let sum: f64 = shown.iter().map(|f| f.delta).sum();
    let total = c
        .metrics
        .iter()
        .find(|m| m.metric == Metric::InstructionsPerRequest)
        .and_then(|m| Some(m.new.as_ref()?.mean - m.old.as_ref()?.mean));
    let of = total.map_or(String::new(), |t| {
        format!(" of the total's {t:+.1} (mean over repetitions)")
    });
    let note = format!(
        "these {} of {} functions that moved by {} or more a request add up to {sum:+.1} \
         instructions per request{of}; inlined code is counted in the function it was inlined \
         into",
        shown.len(),
        c.functions.len(),
        crate::results::attribution::MIN_DELTA,
    );
    Some((rows, note))
}

pub fn verdict(m: &MetricComparison) -> &'static str {
    m.verdict.word(m.metric)
}

/// Which side(s) of a cell are suspect or did not complete, for a marker next to its name.
pub fn suspect_mark(c: &CellComparison) -> String {
    let mut m = match (c.suspect_old, c.suspect_new) {
        (true, true) => " ⚠ suspect (both)",
        (true, false) => " ⚠ suspect (old)",
        (false, true) => " ⚠ suspect (new)",
        (false, false) => "",
    }
    .to_string();
    if !c.failures.is_empty() {
        m.push_str(" ✗ not ok");
    }
    m
}

/// "2 better, 1 worse, 30 no change, ..." over every metric of every matched cell.
pub fn summary(c: &Comparison) -> String {
    let parts: Vec<String> = [
        (Verdict::Better, "better"),
        (Verdict::Worse, "worse"),
        (Verdict::NoChange, "no change"),
        (Verdict::Undetermined, "without CI"),
        (Verdict::NotComparable, "not comparable"),
    ]
    .iter()
    .map(|&(v, w)| (c.count(v), w))
    .filter(|&(n, w)| n > 0 || w == "better" || w == "worse")
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    format!(
        "cells matched: {}; metrics: {}; suspect cells: {}",
        c.cells.len(),
        parts.join(", "),
        c.cells.iter().filter(|x| x.suspect()).count()
    )
}

/// "run X (commit abc123def456)".
pub fn side_line(s: &super::model::Side) -> String {
    match &s.git_commit {
        Some(g) => format!("run {} (commit {})", s.run_id, &g[..g.len().min(12)]),
        None => format!("run {}", s.run_id),
    }
}

/// One line about where the runs were made (the old side; identical unless forced).
pub fn machine_line(c: &Comparison) -> String {
    let fmt = |s: &super::model::Side| {
        format!(
            "{} × {} logical CPUs, load generator `{}`",
            s.cpu_model.as_deref().unwrap_or("unknown CPU"),
            s.logical_cpus.map_or_else(|| "?".into(), |n| n.to_string()),
            s.loadgen_version.as_deref().unwrap_or("unknown")
        )
    };
    let (o, n) = (fmt(&c.old), fmt(&c.new));
    if o == n {
        o
    } else {
        format!("old: {o}; new: {n}")
    }
}

pub fn rule(c: &Comparison) -> String {
    let own = if instructions_compared(&c.cells) {
        format!(
            " ({} % for instructions/request)",
            difference::noise_pct_for(Metric::InstructionsPerRequest, c.noise_pct)
        )
    } else {
        String::new()
    };
    format!(
        "{}. Verdict \"no change\" unless the CI excludes zero and the change exceeds {} %{own}. MDE: the smallest difference these repetitions detect (95 % confidence, 80 % power), from the runs' calibration, or (~) from the two sides' own spread.",
        c.method, c.noise_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::matching::CellId;
    use crate::results::attribution::FunctionDelta;
    use crate::results::metric::{MetricValues, Unit};

    #[test]
    fn a_cell_whose_instructions_moved_lists_its_functions_and_what_they_add_up_to() {
        let side = |mean| MetricValues::from_values(vec![mean, mean]);
        let delta = |f: &str, k: &str, old: f64, new: f64| FunctionDelta {
            function: f.into(),
            krate: k.into(),
            old,
            new,
            delta: new - old,
        };
        let mut cell = CellComparison {
            id: CellId::of(&Default::default()),
            key: "k".into(),
            suspect_old: false,
            suspect_new: false,
            suspect_reasons: vec![],
            failures: vec![],
            not_comparable: vec![],
            metrics: vec![MetricComparison {
                metric: Metric::InstructionsPerRequest,
                unit: Unit::Count,
                old: side(2188.0),
                new: side(2354.0),
                difference: None,
                verdict: Verdict::Worse,
                mde_pct: None,
                mde_source: None,
            }],
            functions: vec![
                delta("_int_free", "libc", 0.0, 64.0),
                delta("malloc", "libc", 0.0, 41.0),
                delta("evil\u{1b}[2J", "x", 3.0, 2.0),
            ],
            new_incomplete: false,
            open_loop: false,
        };
        let (rows, note) = function_rows(&cell).unwrap();
        assert_eq!(
            rows[0],
            ["_int_free", "libc", "0.0", "64.0", "+64.0"].map(String::from)
        );
        assert_eq!(
            rows[2][0], "evil\\u{1b}[2J",
            "no terminal escape gets through"
        );
        assert!(
            note.contains("these 3 of 3 functions")
                && note.contains("add up to +104.0")
                && note.contains("of the total's +166.0"),
            "{note}"
        );
        cell.functions.clear();
        assert!(function_rows(&cell).is_none());
    }
}
