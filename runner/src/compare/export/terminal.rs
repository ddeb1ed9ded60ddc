//! The terminal table: one block per matched cell, colour (green better, red worse, yellow
//! warnings) only when the caller says stdout is a terminal.

use std::fmt::Write as _;

use super::super::model::Comparison;
use super::{
    columns, function_rows, machine_line, rule, side_line, summary, suspect_mark, verdict,
};
use crate::results::difference::Verdict;

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

pub fn render(c: &Comparison, colour: bool) -> String {
    let paint = |code: &str, s: &str| {
        if colour {
            format!("{code}{s}{RESET}")
        } else {
            s.to_string()
        }
    };
    let mut o = String::new();
    let _ = writeln!(o, "old: {}  [{}]", side_line(&c.old), c.old.label);
    let _ = writeln!(o, "new: {}  [{}]", side_line(&c.new), c.new.label);
    let _ = writeln!(o, "machine: {}", machine_line(c));
    let _ = writeln!(o, "{}", rule(c));
    if c.forced {
        let _ = writeln!(
            o,
            "{}",
            paint(
                YELLOW,
                "FORCED (--force): the runs are not comparable; read every verdict with that in mind:"
            )
        );
        for r in &c.incomparable {
            let _ = writeln!(o, "  - {r}");
        }
        for cell in c.cells.iter().filter(|x| !x.not_comparable.is_empty()) {
            let _ = writeln!(o, "  - {}: {}", cell.id, cell.not_comparable.join("; "));
        }
    }
    for w in &c.warnings {
        let _ = writeln!(o, "{}", paint(YELLOW, &format!("warning: {w}")));
    }
    let _ = writeln!(o, "{}", summary(c));
    for (what, ids) in [("old", &c.only_old), ("new", &c.only_new)] {
        for id in ids.iter() {
            let _ = writeln!(o, "only in {what}: {id}");
        }
    }
    // The metric column fits its longest name ("context switches/request"), one width for
    // every cell so the columns line up down the whole output.
    let w = (c.cells.iter())
        .flat_map(|cell| cell.metrics.iter())
        .map(|m| columns(m)[0].chars().count())
        .fold("metric".len(), usize::max);
    for cell in &c.cells {
        let _ = writeln!(o);
        let _ = write!(o, "{}", paint(BOLD, &cell.id.to_string()));
        let mark = suspect_mark(cell);
        if !mark.is_empty() {
            let _ = write!(o, "{}", paint(YELLOW, &mark));
        }
        let _ = writeln!(o);
        for r in &cell.failures {
            let _ = writeln!(o, "  ✗ {r}");
        }
        for r in &cell.suspect_reasons {
            let _ = writeln!(o, "  ⚠ {r}");
        }
        for r in &cell.not_comparable {
            let _ = writeln!(o, "  not comparable: {r}");
        }
        let _ = writeln!(
            o,
            "  {:<w$} {:>10} {:>10} {:>8}  {:<32} {:>8}  verdict",
            "metric", "old", "new", "new/old", "change [95 % CI]", "MDE"
        );
        for m in &cell.metrics {
            let v = verdict(m);
            let v = match m.verdict {
                Verdict::Better => paint(GREEN, v),
                Verdict::Worse => paint(RED, v),
                Verdict::NotComparable => paint(YELLOW, v),
                _ => v.to_string(),
            };
            let [metric, old, new, ratio, change, mde] = columns(m);
            let _ = writeln!(
                o,
                "  {metric:<w$} {old:>10} {new:>10} {ratio:>8}  {change:<32} {mde:>8}  {v}"
            );
        }
        if let Some((rows, note)) = function_rows(cell) {
            let _ = writeln!(o, "  where instructions/request moved:");
            for [f, k, old, new, d] in rows {
                let _ = writeln!(o, "    {d:>9} {old:>9} → {new:<9} {f} [{k}]");
            }
            let _ = writeln!(o, "    ({note})");
        }
    }
    o
}
