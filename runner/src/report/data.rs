//! What the charts read: cells grouped by (scenario, profile), each cell's position on the
//! load axis, and merged latency histograms decoded from the generator reports.

use hdrhistogram::Histogram;
use loadgen::LoadModel;

use crate::results::group::{self, Group};
use crate::results::schema::{CellResult, CellSummary};
use crate::results::set::ResultSet;

pub fn groups(set: &ResultSet) -> Vec<Group<'_>> {
    group::groups(&set.results.cells)
}

/// Position on the load axis: connections (closed loop) or offered req/s (open loop).
/// From the cell's spec when its file exists, else parsed from the level label
/// ("c64", "c16p16", "r20000").
pub fn load_x(set: &ResultSet, c: &CellSummary) -> Option<f64> {
    if let Some(rate) = c.offered_rate_per_s {
        return Some(rate);
    }
    if let Some(cell) = set.cells.get(&c.key) {
        return match cell.cell.load {
            LoadModel::Closed { connections, .. } => Some(f64::from(connections)),
            LoadModel::Open { rate_per_s, .. } => Some(rate_per_s),
        };
    }
    let digits: String = c
        .level
        .trim_start_matches(['c', 'r'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Latency histograms (µs) of each measured repetition of a cell that recorded one.
pub fn rep_latencies(cell: &CellResult) -> anyhow::Result<Vec<Histogram<u64>>> {
    let mut out = Vec::new();
    for rep in cell.reps.iter().filter(|r| r.rep > 0) {
        let b64 = &rep.report.latency_hdr_v2_b64;
        if b64.is_empty() {
            continue;
        }
        let h = loadgen::hdr_v2_decode(b64)
            .map_err(|e| anyhow::anyhow!("cell {} rep {}: {e}", cell.cell.key, rep.rep))?;
        if !h.is_empty() {
            out.push(h);
        }
    }
    Ok(out)
}

/// Latency histogram (µs) of all measured repetitions of a cell, merged. `None` when the
/// cell file is missing or holds no histogram.
pub fn merged_latency(cell: &CellResult) -> anyhow::Result<Option<Histogram<u64>>> {
    merge(&rep_latencies(cell)?).map_err(|e| anyhow::anyhow!("cell {}: {e}", cell.cell.key))
}

/// One histogram holding every value of `hs`; `None` for none.
pub fn merge(hs: &[Histogram<u64>]) -> anyhow::Result<Option<Histogram<u64>>> {
    let mut merged: Option<Histogram<u64>> = None;
    for h in hs {
        // An auto-resizing target: repetitions may have recorded different maxima.
        let m = match &mut merged {
            Some(m) => m,
            None => merged.insert(
                Histogram::new(h.sigfig()).map_err(|e| anyhow::anyhow!("histogram: {e:?}"))?,
            ),
        };
        m.add(h)
            .map_err(|e| anyhow::anyhow!("cannot merge histograms: {e:?}"))?;
    }
    Ok(merged.filter(|h| !h.is_empty()))
}

/// File-name-safe form of a label.
pub fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}
