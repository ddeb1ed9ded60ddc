//! results.md's "Connection churn" table: per service and churn level, the service's RSS
//! before the first cycle, after cycle 1 and after the last cycle (each after closing every
//! connection and letting the service settle), the growth between them, and whether RSS
//! levelled off or is still growing. Written only when the run has churn cells.

use std::fmt::Write as _;

use crate::results::churn::{self, ChurnSummary};
use crate::results::schema::{CellStatus, CellSummary, ResultsFile};
use crate::results::units::mib_cell;

const MIB: f64 = 1024.0 * 1024.0;

pub fn section(o: &mut String, res: &ResultsFile) {
    let cells: Vec<&CellSummary> = res.cells.iter().filter(|c| c.churn.is_some()).collect();
    if cells.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Connection churn: memory after closing connections\n");
    let _ = writeln!(
        o,
        "Each cycle opens C connections (one request and its 200 each), holds them, closes them \
         all and reads the service's RSS once it settles. RSS that keeps rising from cycle to \
         cycle is memory the service keeps for connections that are gone. Median over \
         repetitions; \"still growing\" = over the second half of the cycles RSS rose by more \
         than max(0.5 MiB, 0.5 % of cycle 1) per cycle.\n"
    );
    let _ = writeln!(
        o,
        "| service | scenario | profile | C × cycles | RSS before | after cycle 1 | after last cycle | growth 1 → last | verdict | failed connections |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        let Some(s) = &c.churn else { continue };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} × {} | {} |",
            c.service,
            c.scenario,
            c.profile,
            s.connections,
            s.cycles,
            row(c, s)
        );
    }
    let _ = writeln!(o);
}

fn row(c: &CellSummary, s: &ChurnSummary) -> String {
    let bad = match c.status {
        Some(CellStatus::Failed) => Some("✗ failed"),
        Some(CellStatus::Unsupported) => Some("n/a (unsupported)"),
        Some(CellStatus::Interrupted) => Some("interrupted"),
        _ if s.n == 0 => Some("–"),
        _ => None,
    };
    if let Some(b) = bad {
        return ["–", "–", "–", "–", b, "–"].join(" | ");
    }
    let mib = |b: Option<u64>| b.map_or("–".into(), |b| mib_cell(b as f64));
    let growth = match (s.growth_bytes, s.growth_pct) {
        (Some(g), Some(p)) => format!("{:+.1} MiB ({p:+.0} %)", g as f64 / MIB),
        (Some(g), None) => format!("{:+.1} MiB", g as f64 / MIB),
        _ => "–".into(),
    };
    let failed = if s.failed > 0 {
        format!("{} of {} ⚠", s.failed, s.opened)
    } else {
        format!("0 of {}", s.opened)
    };
    [
        mib(s.rss_before_bytes),
        mib(s.rss_first_bytes),
        mib(s.rss_last_bytes),
        growth,
        churn::flag(s),
        failed,
    ]
    .join(" | ")
}
