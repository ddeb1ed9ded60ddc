//! Rank bands: services a run cannot tell apart share a band, never an order. Per cell
//! position (scenario, level, profile) and metric, services are sorted best first; the best
//! opens band 1, and each next service joins the open band unless the run's own interval
//! (the paired one the baseline verdicts use, `difference::between`, with the same noise
//! threshold) says it differs from that band's leader — then it opens the next band.
//! Counted metrics (syscalls, context switches, instructions per request) are banded the
//! same way among the cells that counted them.

use std::collections::BTreeMap;

use crate::results::difference::{self, NOISE_PCT, Verdict};
use crate::results::metric::{self, Metric, by_rep};
use crate::results::schema::{CellResult, CellStatus};

/// cell key → metric (as results.json names it) → band (1 = the best the run can tell).
pub type Bands = BTreeMap<String, BTreeMap<String, u32>>;

/// The metric's name in the JSON (`requests_per_s`, …).
pub fn name(m: Metric) -> String {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn rankable(c: &CellResult) -> bool {
    matches!(c.status, CellStatus::Ok | CellStatus::Partial)
        && c.cell.arm.is_none()
        && c.cell.churn.is_none()
        && !c.reps.is_empty()
}

pub fn of<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> Bands {
    let mut by_position: BTreeMap<(&str, &str, &str), Vec<&CellResult>> = BTreeMap::new();
    for c in cells.into_iter().filter(|c| rankable(c)) {
        by_position
            .entry((&c.cell.scenario, &c.cell.level, &c.cell.profile))
            .or_default()
            .push(c);
    }
    let mut out = Bands::new();
    for group in by_position.values() {
        // Counted metrics too: `bands_for` skips cells without their values, so runs that
        // did not count get no counted bands.
        for m in metric::measured_under(&group[0].cell.load).chain(metric::counted()) {
            for (key, band) in bands_for(group, m) {
                out.entry(key).or_default().insert(name(m), band);
            }
        }
    }
    out
}

/// A cell, its (round, value) pairs for the metric, and the figure the board shows for it.
type Ranked<'a> = (&'a CellResult, Vec<(u32, f64)>, f64);

/// One position's cells for one metric: (key, band) for every cell that measured it.
fn bands_for(group: &[&CellResult], m: Metric) -> Vec<(String, u32)> {
    let mut ranked: Vec<Ranked> = group
        .iter()
        .filter_map(|c| {
            let v = by_rep(c, m);
            let mean = crate::results::stats::mean(&v.iter().map(|x| x.1).collect::<Vec<_>>())?;
            // Ordered by the figure the board shows and sorts by (the summary's: a mean, or
            // for latency percentiles the median over repetitions; for counts their median),
            // so the bands never run backwards down a sorted column.
            let shown = if m.def().counted {
                // Counts are shown as the median over their repetitions.
                crate::results::stats::median(&v.iter().map(|x| x.1).collect::<Vec<_>>())?
            } else {
                metric::from_summary(&c.summary, m).map_or(mean, |s| s.mean)
            };
            Some((*c, v, shown))
        })
        .collect();
    let sign = if m.higher_is_better() { -1.0 } else { 1.0 };
    ranked.sort_by(|a, b| (sign * a.2).total_cmp(&(sign * b.2)));
    let mut out = Vec::new();
    let mut band = 0;
    let mut leader: Option<&Vec<(u32, f64)>> = None;
    for (i, (c, values, shown)) in ranked.iter().enumerate() {
        // Cells the board shows with the same figure share a band: their order on the board
        // is the sort's choice, and the bands must not run backwards whichever it takes.
        let tied = i > 0 && ranked[i - 1].2 == *shown;
        let distinct = !tied
            && match leader {
                None => true,
                Some(l) => difference::between(l, values).is_some_and(|d| {
                    matches!(
                        difference::verdict(m, &d, NOISE_PCT),
                        Verdict::Better | Verdict::Worse
                    )
                }),
            };
        if distinct {
            band += 1;
            leader = Some(values);
        }
        out.push((c.cell.key.clone(), band));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::html::detail::tests::cell_with_rps;

    #[test]
    fn services_within_each_others_interval_share_a_band() {
        // a and b differ by ~1 % with overlapping rounds; c is 2× slower in every round.
        let a = cell_with_rps("a", &[100_000.0, 101_000.0, 99_500.0]);
        let b = cell_with_rps("b", &[99_800.0, 100_900.0, 99_000.0]);
        let c = cell_with_rps("c", &[50_000.0, 50_500.0, 49_800.0]);
        let bands = of([&a, &b, &c]);
        let band = |k: &str| bands[k]["requests_per_s"];
        assert_eq!(band(&a.cell.key), 1);
        assert_eq!(
            band(&b.cell.key),
            1,
            "indistinguishable from the leader: same band"
        );
        assert_eq!(band(&c.cell.key), 2);
    }

    #[test]
    fn cells_shown_with_the_same_figure_share_a_band() {
        // b and c have the same mean (the figure the board sorts by); b differs from the
        // leader a in every round, c's rounds are too spread to tell. Whichever of b and c
        // comes first, they share a band, so no sort of the board puts 2 above 1.
        let a = cell_with_rps("a", &[100.0, 101.0, 99.0]);
        let b = cell_with_rps("b", &[90.0, 90.5, 89.5]);
        let c = cell_with_rps("c", &[60.0, 120.0, 90.0]);
        for order in [[&a, &b, &c], [&a, &c, &b]] {
            let bands = of(order);
            let band = |k: &str| bands[k]["requests_per_s"];
            assert_eq!(band(&a.cell.key), 1);
            assert_eq!(band(&b.cell.key), band(&c.cell.key), "{bands:?}");
        }
    }

    #[test]
    fn a_clear_order_gives_one_band_each_and_failed_cells_none() {
        let a = cell_with_rps("a", &[300.0, 301.0, 299.0]);
        let b = cell_with_rps("b", &[200.0, 201.0, 199.0]);
        let mut f = cell_with_rps("f", &[400.0, 401.0, 399.0]);
        f.status = CellStatus::Failed;
        let bands = of([&b, &a, &f]);
        assert_eq!(bands[&a.cell.key]["requests_per_s"], 1);
        assert_eq!(bands[&b.cell.key]["requests_per_s"], 2);
        assert!(!bands.contains_key(&f.cell.key));
    }

    #[test]
    fn counted_metrics_are_banded_where_counted_and_only_there() {
        let s = crate::results::set::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../results/2026-12-01T22-45-32Z-494f328"),
        )
        .unwrap();
        let bands = of(s.cells.values());
        let at = |k: &str| &bands[k];
        let epoll = at("ping-epoll__ping__c1__pinned");
        for m in [
            "syscalls_per_request",
            "ctx_switches_per_request",
            "instructions_per_request",
        ] {
            assert!(epoll.contains_key(m), "{m} not banded: {epoll:?}");
        }
        // This run predates counting io_uring services under Valgrind: no instruction band.
        let monoio = at("ping-monoio__ping__c1__pinned");
        assert!(!monoio.contains_key("instructions_per_request"));
        assert!(monoio.contains_key("syscalls_per_request"));
        // A run that did not count has no counted bands.
        let reference = crate::results::set::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../results/2026-12-01T06-28-28Z-492c110"),
        )
        .unwrap();
        assert!(
            of(reference.cells.values())
                .values()
                .all(|b| !b.contains_key("syscalls_per_request"))
        );
    }
}
