//! `--format markdown`: a header saying what was compared and how, then one table row per
//! (cell, metric). No headings, so the text can sit inside any README section.

use std::fmt::Write as _;

use super::super::model::Comparison;
use super::{
    columns, function_rows, machine_line, rule, side_line, summary, suspect_mark, verdict,
};
use crate::results::difference::Verdict;

pub fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**pingmatrix compare**: old {} → new {}, on {}.\n",
        side_line(&c.old),
        side_line(&c.new),
        machine_line(c)
    );
    let _ = writeln!(o, "{}\n", rule(c));
    if c.forced {
        let mut why = c.incomparable.clone();
        for cell in c.cells.iter().filter(|x| !x.not_comparable.is_empty()) {
            why.push(format!("{}: {}", cell.id, cell.not_comparable.join("; ")));
        }
        let _ = writeln!(
            o,
            "> **Forced comparison (`--force`)**: the runs are not comparable — {}.\n",
            why.join("; ")
        );
    }
    for w in &c.warnings {
        let _ = writeln!(o, "> **Warning:** {w}.\n");
    }
    let _ = writeln!(o, "Summary: {}.\n", summary(c));
    let _ = writeln!(
        o,
        "| cell | metric | old | new | new/old | change [95 % CI] | MDE | verdict |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---:|---|---:|---|");
    for cell in &c.cells {
        for (i, m) in cell.metrics.iter().enumerate() {
            let name = if i == 0 {
                format!("{}{}", cell.id, suspect_mark(cell))
            } else {
                String::new()
            };
            let v = verdict(m);
            let v = match m.verdict {
                Verdict::Better | Verdict::Worse => format!("**{v}**"),
                _ => v.to_string(),
            };
            let [metric, old, new, ratio, change, mde] = columns(m);
            let _ = writeln!(
                o,
                "| {name} | {metric} | {old} | {new} | {ratio} | {change} | {mde} | {v} |"
            );
        }
    }
    let _ = writeln!(o);
    for cell in &c.cells {
        let Some((rows, note)) = function_rows(cell) else {
            continue;
        };
        let _ = writeln!(o, "Where instructions/request moved in {}:\n", cell.id);
        let _ = writeln!(o, "| function | crate | old | new | Δ/request |");
        let _ = writeln!(o, "|---|---|---:|---:|---:|");
        for [f, k, old, new, d] in rows {
            let span = |s: &str| s.replace('`', "'").replace('|', "¦");
            let _ = writeln!(
                o,
                "| `{}` | `{}` | {old} | {new} | {d} |",
                span(&f),
                span(&k)
            );
        }
        let _ = writeln!(o, "\n{}.\n", note[..1].to_uppercase() + &note[1..]);
    }
    for (what, ids) in [("old", &c.only_old), ("new", &c.only_new)] {
        if !ids.is_empty() {
            let list: Vec<String> = ids.iter().map(|i| format!("`{i}`")).collect();
            let _ = writeln!(o, "Only in {what}: {}.\n", list.join(", "));
        }
    }
    let notes: Vec<String> = c
        .cells
        .iter()
        .filter(|x| {
            x.suspect() || !x.failures.is_empty() || (!x.not_comparable.is_empty() && !c.forced)
        })
        .map(|x| {
            let mut why = x.failures.clone();
            why.extend(x.suspect_reasons.iter().cloned());
            why.extend(
                x.not_comparable
                    .iter()
                    .map(|r| format!("not comparable: {r}")),
            );
            format!("- `{}`: {}", x.id, why.join("; "))
        })
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(
            o,
            "Suspect, failed or not comparable cells:\n\n{}\n",
            notes.join("\n")
        );
    }
    o
}
