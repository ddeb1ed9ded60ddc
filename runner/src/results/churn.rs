//! Connection churn (`model = "churn"`): what one repetition records — per cycle, the
//! service's RSS with C connections open and after closing them — and the cell's summary:
//! RSS before, after cycle 1 and after the last cycle, and whether it levelled off or keeps
//! growing (a leak a user can read).

use super::schema::{CellResult, CellStatus};
pub use super::schema::{ChurnCycle, ChurnRep, ChurnSpec, ChurnSummary, ChurnVerdict};
use super::stats::median;

const MIB: f64 = 1024.0 * 1024.0;

/// Growing: over the second half of the cycles RSS still rises by more than
/// `max(GROWTH_FLOOR_BYTES, GROWTH_FLOOR_FRACTION × first)` per cycle. Page-granular
/// allocator noise on an idle service is well under 1 MiB between cycles.
pub const GROWTH_FLOOR_BYTES: f64 = 512.0 * 1024.0;
pub const GROWTH_FLOOR_FRACTION: f64 = 0.005;

fn growth_floor(first: u64) -> f64 {
    GROWTH_FLOOR_BYTES.max(GROWTH_FLOOR_FRACTION * first as f64)
}

/// `(verdict, late slope in bytes per cycle)` for RSS after each cycle, in order.
pub fn verdict(closed: &[u64]) -> (ChurnVerdict, Option<f64>) {
    let n = closed.len();
    if n < 2 {
        return (ChurnVerdict::Unknown, None);
    }
    // Second half, including the middle cycle: 5 cycles → cycles 3..=5, 2 → 1..=2.
    let from = (n - 1) / 2;
    let span = (n - 1 - from) as f64;
    let slope = (closed[n - 1] as f64 - closed[from] as f64) / span;
    let v = if slope > growth_floor(closed[0]) {
        ChurnVerdict::Growing
    } else {
        ChurnVerdict::Levelled
    };
    (v, Some(slope))
}

fn med(xs: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let v: Vec<f64> = xs.flatten().map(|x| x as f64).collect();
    median(&v).map(|m| m.round() as u64)
}

/// The cell's churn summary over its (non-drift) complete repetitions.
pub fn summarize(spec: &ChurnSpec, reps: &[ChurnRep]) -> ChurnSummary {
    let reps: Vec<&ChurnRep> = reps
        .iter()
        .filter(|r| r.rep > 0 && r.partial.is_none())
        .collect();
    let cycles = reps.iter().map(|r| r.cycles.len()).max().unwrap_or(0);
    let closed: Vec<Option<u64>> = (0..cycles)
        .map(|i| med(reps.iter().map(|r| r.cycles.get(i)?.rss_closed_bytes)))
        .collect();
    let first = closed.first().copied().flatten();
    let last = closed.last().copied().flatten();
    let growth = first.zip(last).map(|(f, l)| l as i64 - f as i64);
    // Each repetition's own late slope, then their median: a step of the allocator lands
    // in different cycles in different repetitions, and a median per cycle would mix them.
    let slopes: Vec<f64> = reps
        .iter()
        .filter_map(|r| {
            let closed: Option<Vec<u64>> = r.cycles.iter().map(|c| c.rss_closed_bytes).collect();
            verdict(&closed?).1
        })
        .collect();
    let slope = median(&slopes);
    let verdict = match (slope, first) {
        (Some(s), Some(f)) if s > growth_floor(f) => ChurnVerdict::Growing,
        (Some(_), Some(_)) => ChurnVerdict::Levelled,
        _ => ChurnVerdict::Unknown,
    };
    let all = || reps.iter().flat_map(|r| r.cycles.iter());
    ChurnSummary {
        connections: spec.connections,
        cycles: spec.cycles,
        n: reps.len() as u32,
        rss_before_bytes: med(reps.iter().map(|r| r.rss_before_bytes)),
        rss_closed_bytes: closed,
        rss_first_bytes: first,
        rss_last_bytes: last,
        growth_bytes: growth,
        growth_pct: first
            .zip(growth)
            .filter(|(f, _)| *f > 0)
            .map(|(f, g)| g as f64 / f as f64 * 100.0),
        late_slope_bytes_per_cycle: slope,
        verdict,
        opened: all().map(|c| u64::from(c.opened)).sum(),
        failed: all().map(|c| u64::from(c.failed)).sum(),
    }
}

/// The plain-words flag results.md shows.
pub fn flag(s: &ChurnSummary) -> String {
    match (s.verdict, s.late_slope_bytes_per_cycle) {
        (ChurnVerdict::Growing, Some(slope)) => format!(
            "still growing after {} cycles: +{:.1} MiB per cycle",
            s.rss_closed_bytes.len(),
            slope / MIB
        ),
        (ChurnVerdict::Levelled, _) => "levelled off".into(),
        _ => "not enough cycles measured".into(),
    }
}

/// Suspect reasons of a churn cell: connections that failed, repetitions missing.
pub fn suspect_reasons(cell: &CellResult) -> Vec<String> {
    if cell.cell.churn.is_none() {
        return Vec::new();
    }
    let reps = &cell.churn;
    let mut r = failed_connections(reps);
    let n = reps.iter().filter(|r| r.rep > 0).count() as u32;
    if cell.status == CellStatus::Ok && n < cell.cell.repetitions {
        r.push(format!("only {n} of {} repetitions", cell.cell.repetitions));
    }
    r
}

fn failed_connections(reps: &[ChurnRep]) -> Vec<String> {
    reps.iter()
        .filter_map(|r| {
            let failed: u32 = r.cycles.iter().map(|c| c.failed).sum();
            let opened: u32 = r.cycles.iter().map(|c| c.opened).sum();
            (failed > 0).then(|| {
                format!(
                    "rep {}: churn: {failed} of {opened} connections failed",
                    r.rep
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: u64 = 1024 * 1024;

    fn mib(xs: &[u64]) -> Vec<u64> {
        xs.iter().map(|x| x * M).collect()
    }

    #[test]
    fn steady_leak_is_growing() {
        // may-minihttp in issue 12: 42 → 172 MB over 8 cycles.
        let (v, slope) = verdict(&mib(&[42, 60, 79, 98, 116, 135, 153, 172]));
        assert_eq!(v, ChurnVerdict::Growing);
        assert!((slope.unwrap() / M as f64 - 18.5).abs() < 1e-9, "{slope:?}");
        // tokio: 30 → 55 MB, slower but still rising at the end.
        let (v, _) = verdict(&mib(&[30, 35, 39, 42, 46, 49, 52, 55]));
        assert_eq!(v, ChurnVerdict::Growing);
    }

    #[test]
    fn a_first_cycle_jump_then_flat_is_levelled() {
        // monoio: pools grow once, then stay.
        let (v, slope) = verdict(&mib(&[40, 52, 53, 53, 53]));
        assert_eq!(v, ChurnVerdict::Levelled);
        assert_eq!(slope, Some(0.0));
        // Page-sized noise, and shrinking, are not growth.
        let noisy = [40 * M, 40 * M + 8192, 40 * M - 4096, 40 * M + 12288, 40 * M];
        assert_eq!(verdict(&noisy).0, ChurnVerdict::Levelled);
        assert_eq!(verdict(&mib(&[60, 50, 45])).0, ChurnVerdict::Levelled);
    }

    #[test]
    fn the_verdict_takes_the_median_of_each_repetitions_slope() {
        // A one-off step (allocator) in a different late cycle of two repetitions: per-cycle
        // medians would show a rise, no repetition keeps rising.
        let spec = ChurnSpec {
            connections: 10,
            cycles: 8,
        };
        let rep = |rep, xs: [u64; 8]| ChurnRep {
            rep,
            started_unix_ms: 0,
            rss_before_bytes: Some(3 * M),
            cycles: xs
                .iter()
                .enumerate()
                .map(|(i, x)| cyc(i as u32 + 1, *x, 0))
                .collect(),
            partial: None,
        };
        let reps = [
            rep(1, [12, 15, 17, 17, 17, 20, 20, 20]),
            rep(2, [12, 15, 19, 20, 20, 20, 20, 20]),
            rep(3, [12, 15, 17, 17, 17, 17, 17, 18]),
        ];
        let s = summarize(&spec, &reps);
        assert_eq!(s.verdict, ChurnVerdict::Levelled, "{s:?}");
        assert_eq!(flag(&s), "levelled off");
    }

    #[test]
    fn one_cycle_has_no_trend() {
        assert_eq!(verdict(&[5 * M]).0, ChurnVerdict::Unknown);
        assert_eq!(verdict(&[]).0, ChurnVerdict::Unknown);
        assert_eq!(verdict(&mib(&[5, 9])).0, ChurnVerdict::Growing);
    }

    fn cyc(cycle: u32, closed_mib: u64, failed: u32) -> ChurnCycle {
        ChurnCycle {
            cycle,
            opened: 10,
            served: 10 - failed,
            failed,
            rss_open_bytes: Some((closed_mib + 5) * M),
            rss_closed_bytes: Some(closed_mib * M),
            settle_ms: 50,
            fds_idle: None,
            fd_settle_ms: None,
            open_ms: 10,
        }
    }

    #[test]
    fn summary_takes_medians_per_cycle_and_flags() {
        let spec = ChurnSpec {
            connections: 10,
            cycles: 3,
        };
        let rep = |rep, xs: [u64; 3], failed| ChurnRep {
            rep,
            started_unix_ms: 0,
            rss_before_bytes: Some(8 * M),
            cycles: xs
                .iter()
                .enumerate()
                .map(|(i, x)| cyc(i as u32 + 1, *x, failed))
                .collect(),
            partial: None,
        };
        let mut cut = rep(4, [1, 1, 1], 0);
        cut.cycles.pop();
        cut.partial = Some("service exited during churn cycle 3 with signal 9".into());
        let reps = vec![
            rep(1, [10, 20, 30], 0),
            rep(2, [10, 22, 34], 1),
            rep(3, [12, 20, 32], 0),
            rep(0, [99, 99, 99], 0), // drift re-run: not summarised
            cut,                     // kept on the cell, not summarised
        ];
        let s = summarize(&spec, &reps);
        assert_eq!(s.n, 3);
        assert_eq!(s.rss_before_bytes, Some(8 * M));
        assert_eq!(s.rss_first_bytes, Some(10 * M));
        assert_eq!(s.rss_last_bytes, Some(32 * M));
        assert_eq!(s.growth_bytes, Some(22 * M as i64));
        assert!((s.growth_pct.unwrap() - 220.0).abs() < 1e-9);
        assert_eq!(s.verdict, ChurnVerdict::Growing);
        assert_eq!(
            flag(&s),
            "still growing after 3 cycles: +12.0 MiB per cycle"
        );
        assert_eq!((s.opened, s.failed), (90, 3)); // the drift and the cut rep are left out
        assert_eq!(
            failed_connections(&reps),
            vec!["rep 2: churn: 3 of 30 connections failed"]
        );
    }
}
