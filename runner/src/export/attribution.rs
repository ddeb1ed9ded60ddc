//! results.md's "Where the instructions go": for every cell whose instructions were counted
//! with their functions, each service's user-space instructions per request by crate and its
//! costliest functions (cachegrind's per-function counts, differenced like the total).
//! Written only when some cell has them (runs recorded before them render as they did).

use std::fmt::Write as _;

use crate::results::schema::{CellSummary, CountedSummary, ResultsFile};
use crate::results::units::count;

/// Crates and functions shown per service.
const CRATES: usize = 6;
const FUNCTIONS: usize = 5;

fn attributed(c: &CellSummary) -> Option<&CountedSummary> {
    c.counted
        .as_ref()
        .filter(|k| !k.instruction_crates.is_empty())
}

/// `httparse 512 (23 %) · libc 401 (18 %) · …`: the crates with the most instructions per
/// request, each with its share of the total.
pub fn crates_line(k: &CountedSummary, n: usize) -> String {
    let total: f64 = k.instruction_crates.iter().map(|(_, s)| s.median).sum();
    let mut parts: Vec<String> = k
        .instruction_crates
        .iter()
        .take(n)
        .map(|(name, s)| {
            let share = if total > 0.0 {
                format!(" ({:.0} %)", 100.0 * s.median / total)
            } else {
                String::new()
            };
            format!("{name} {}{share}", count(s.median))
        })
        .collect();
    let rest = k.instruction_crates.len().saturating_sub(n);
    if rest > 0 {
        parts.push(format!("{rest} more"));
    }
    parts.join(" · ")
}

/// `` `httparse::Request::parse` 300 · `malloc` 41 ``: the costliest functions.
fn functions_line(k: &CountedSummary, n: usize) -> String {
    if k.instruction_functions.is_empty() {
        return "–".into();
    }
    k.instruction_functions
        .iter()
        .take(n)
        .map(|f| format!("`{}` {}", code_span(&f.function), count(f.per_request)))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A symbol as the text of a code span in a table cell: no backtick, pipe or line break can
/// end the span or the cell.
fn code_span(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '`' => '\'',
            '|' => '¦',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

pub fn section(o: &mut String, res: &ResultsFile) {
    let cells: Vec<&CellSummary> = res
        .cells
        .iter()
        .filter(|c| attributed(c).is_some())
        .collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Where the instructions go\n");
    let _ = writeln!(
        o,
        "Each service's user-space instructions per request by crate and its costliest functions: cachegrind's count per function in the same two Valgrind runs as the instructions above, differenced the same way (so start-up and shutdown cancel function by function), median over repetitions. A function is its demangled symbol, summed over the source files it was built from; code inlined from another crate is counted in the function it was inlined into, and a function's crate is the one its symbol names (a trait method's, its type's crate unless that is the standard library's; C functions — the allocator, `memcpy` — are `libc`). The crates add up to the total; functions under 0.5 instructions per request are left out of the list.\n"
    );
    for (scenario, level, profile) in super::counted::positions(&cells) {
        let _ = writeln!(o, "### {scenario} {level} · profile {profile}\n");
        let _ = writeln!(
            o,
            "| service | instructions/request | by crate (share of the total) | costliest functions |"
        );
        let _ = writeln!(o, "|---|---:|---|---|");
        for c in cells.iter().filter(|c| {
            (c.scenario.as_str(), c.level.as_str(), c.profile.as_str())
                == (scenario, level, profile)
        }) {
            let Some(k) = attributed(c) else { continue };
            let total = k
                .instructions
                .as_ref()
                .map_or("–".into(), |s| count(s.median));
            let _ = writeln!(
                o,
                "| {} | {total} | {} | {} |",
                c.service,
                crates_line(k, CRATES),
                functions_line(k, FUNCTIONS),
            );
        }
        let _ = writeln!(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::schema::{FunctionCost, Stat};

    fn stat(v: f64) -> Stat {
        Stat {
            n: 3,
            median: v,
            ..Default::default()
        }
    }

    #[test]
    fn crates_with_shares_and_functions_by_cost() {
        let k = CountedSummary {
            instruction_crates: vec![
                ("ping_epoll".into(), stat(1000.0)),
                ("httparse".into(), stat(600.0)),
                ("libc".into(), stat(400.0)),
            ],
            instruction_functions: vec![
                FunctionCost {
                    function: "httparse::Request::parse".into(),
                    krate: "httparse".into(),
                    per_request: 512.0,
                },
                FunctionCost {
                    function: "a`b|c".into(),
                    krate: "libc".into(),
                    per_request: 41.0,
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            crates_line(&k, 2),
            "ping_epoll 1,000 (50 %) · httparse 600 (30 %) · 1 more"
        );
        assert_eq!(
            functions_line(&k, 5),
            "`httparse::Request::parse` 512 · `a'b¦c` 41.0"
        );
    }
}
