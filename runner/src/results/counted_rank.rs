//! The rank by counted cost — README's headline and the run page's default order both read
//! it: services ordered by user-space instructions per request, then by syscalls per request
//! (plus io_uring submissions per request, where the run counted them), where services whose counts overlap over their
//! repetitions share a rank (a tie, never an order). Services without an instruction count
//! are ranked after them, among themselves, by syscalls alone: an unmeasured count is never
//! read as 0, and a syscall count is not set against an instruction count.

use std::collections::BTreeMap;

use crate::results::schema::{CellSummary, CountedSummary, Stat};

/// The tracepoint whose count per request joins the syscalls in the rank.
const URING_SUBMISSIONS: &str = "io_uring:io_uring_submit_req";

/// A count over repetitions: its median and the range the repetitions spanned.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(s: &Stat) -> Spread {
        Spread {
            median: s.median,
            min: s.min,
            max: s.max,
        }
    }

    /// The spread of a sum of two counts: medians added, and the range the sum can span.
    fn plus(self, o: Spread) -> Spread {
        Spread {
            median: self.median + o.median,
            min: self.min + o.min,
            max: self.max + o.max,
        }
    }

    fn overlaps(self, o: Spread) -> bool {
        self.min <= o.max && o.min <= self.max
    }
}

/// One service's counts at the level it is ranked at.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    pub instructions: Option<Spread>,
    pub syscalls: Option<Spread>,
}

impl Cost {
    /// A cell's counts: user-space instructions, and the server's syscalls per request plus
    /// its io_uring submissions where they were counted — each an operation the kernel
    /// performs for the service, a syscall's work without a syscall of its own, so a service
    /// that moves its work behind `io_uring_enter` is charged for it.
    pub fn of(k: Option<&CountedSummary>) -> Cost {
        let uring = k
            .and_then(|k| k.server.kernel.get(URING_SUBMISSIONS))
            .map(Spread::of);
        Cost {
            instructions: k.and_then(|k| k.instructions.as_ref()).map(Spread::of),
            syscalls: k
                .and_then(|k| k.server.syscalls.as_ref())
                .map(Spread::of)
                .map(|s| uring.map_or(s, |u| s.plus(u))),
        }
    }
}

/// What a service was ranked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Instructions, then syscalls: the services with an instruction count.
    Instructions,
    /// Syscalls alone, among the services without an instruction count.
    Syscalls,
}

/// A service's rank (1 = cheapest; ties share the rank of their first, as in 1, 2=, 2=, 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub rank: usize,
    pub tied: bool,
    pub basis: Basis,
}

impl Place {
    /// "3", "2=", "1= (syscalls)".
    pub fn label(&self) -> String {
        format!(
            "{}{}{}",
            self.rank,
            if self.tied { "=" } else { "" },
            match self.basis {
                Basis::Instructions => "",
                Basis::Syscalls => " (syscalls)",
            }
        )
    }
}

/// The indices of `costs` in rank order, each with its place; services with neither count
/// come last, in their given order, without a place.
pub fn rank(costs: &[Cost]) -> Vec<(usize, Option<Place>)> {
    let (with_ins, rest): (Vec<usize>, Vec<usize>) =
        (0..costs.len()).partition(|&i| costs[i].instructions.is_some());
    let (with_sys, none): (Vec<usize>, Vec<usize>) =
        rest.into_iter().partition(|&i| costs[i].syscalls.is_some());
    let mut out = Vec::new();
    // Within a tie on instructions, syscalls decide (or tie again).
    let by_ins = tiers(with_ins, |i| costs[i].instructions)
        .into_iter()
        .flat_map(|t| tiers(t, |i| costs[i].syscalls));
    place(&mut out, by_ins, Basis::Instructions);
    place(
        &mut out,
        tiers(with_sys, |i| costs[i].syscalls),
        Basis::Syscalls,
    );
    out.extend(none.into_iter().map(|i| (i, None)));
    out
}

/// Every cell's place among the cells at its position (scenario, profile, level), by
/// [`rank`]: key → (its order there, from 0; its place). Positions where no cell counted are
/// left out; cells keep their given order where the rank leaves them unplaced.
pub fn by_position(cells: &[CellSummary]) -> BTreeMap<String, (usize, Option<Place>)> {
    let mut positions: BTreeMap<(&str, &str, &str), Vec<&CellSummary>> = BTreeMap::new();
    for c in cells {
        positions
            .entry((&c.scenario, &c.profile, &c.level))
            .or_default()
            .push(c);
    }
    let mut out = BTreeMap::new();
    for group in positions.values() {
        let costs: Vec<Cost> = group.iter().map(|c| Cost::of(c.counted.as_ref())).collect();
        if costs.iter().all(|k| *k == Cost::default()) {
            continue;
        }
        for (order, (i, place)) in rank(&costs).into_iter().enumerate() {
            out.insert(group[i].key.clone(), (order, place));
        }
    }
    out
}

fn place(
    out: &mut Vec<(usize, Option<Place>)>,
    tiers: impl IntoIterator<Item = Vec<usize>>,
    basis: Basis,
) {
    let mut next = 1;
    for t in tiers {
        let tied = t.len() > 1;
        out.extend(t.iter().map(|&i| {
            (
                i,
                Some(Place {
                    rank: next,
                    tied,
                    basis,
                }),
            )
        }));
        next += t.len();
    }
}

/// `items` sorted by the median of their spread (stable: equal medians keep their order) and
/// cut into tiers: an item joins the open tier when its spread overlaps every member's, so a
/// tier never holds two services the repetitions set apart. Items without a spread form the
/// last tier.
fn tiers(mut items: Vec<usize>, key: impl Fn(usize) -> Option<Spread>) -> Vec<Vec<usize>> {
    items.sort_by(|&a, &b| match (key(a), key(b)) {
        (Some(x), Some(y)) => x.median.total_cmp(&y.median),
        (x, y) => y.is_some().cmp(&x.is_some()),
    });
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in items {
        let joins = out.last().is_some_and(|t| {
            t.iter().all(|&j| match (key(i), key(j)) {
                (Some(a), Some(b)) => a.overlaps(b),
                (a, b) => a.is_none() && b.is_none(),
            })
        });
        match out.last_mut() {
            Some(t) if joins => t.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(median: f64, min: f64, max: f64) -> Option<Spread> {
        Some(Spread { median, min, max })
    }

    fn labels(costs: &[Cost]) -> Vec<(usize, String)> {
        rank(costs)
            .into_iter()
            .map(|(i, p)| (i, p.map_or_else(|| "–".into(), |p| p.label())))
            .collect()
    }

    #[test]
    fn instructions_rank_first_and_unmeasured_ones_by_syscalls_after_them() {
        // The counted reference run's c1 cells, in the run's order.
        let costs = [
            Cost {
                instructions: s(11079.0, 11078.5, 11078.8),
                syscalls: s(3.0326, 3.0324, 3.0329),
            },
            Cost {
                instructions: None,
                syscalls: s(2.0, 2.0, 2.0),
            },
            Cost {
                instructions: None,
                syscalls: s(9.95, 9.94, 9.96),
            },
            Cost {
                instructions: None,
                syscalls: s(2.0, 2.0, 2.0),
            },
            Cost {
                instructions: s(2185.0, 2185.0, 2185.2),
                syscalls: s(3.0, 3.0, 3.0),
            },
            Cost::default(),
        ];
        assert_eq!(
            labels(&costs),
            [
                (4, "1".into()),
                (0, "2".into()),
                (1, "1= (syscalls)".into()),
                (3, "1= (syscalls)".into()),
                (2, "3 (syscalls)".into()),
                (5, "–".into()),
            ]
        );
    }

    #[test]
    fn overlapping_counts_tie_and_syscalls_split_a_tie_on_instructions() {
        let costs = [
            // a and b overlap in instructions and in syscalls: a tie.
            Cost {
                instructions: s(100.0, 99.0, 101.0),
                syscalls: s(3.0, 3.0, 3.0),
            },
            Cost {
                instructions: s(100.5, 100.2, 101.3),
                syscalls: s(3.0, 2.99, 3.01),
            },
            // c overlaps a and b in instructions but makes fewer syscalls: ranked first.
            Cost {
                instructions: s(100.2, 100.0, 100.4),
                syscalls: s(2.0, 2.0, 2.0),
            },
            // d overlaps b but not a: it opens the next rank rather than chaining the tie.
            Cost {
                instructions: s(101.5, 101.2, 101.9),
                syscalls: s(3.0, 3.0, 3.0),
            },
        ];
        assert_eq!(
            labels(&costs),
            [
                (2, "1".into()),
                (0, "2=".into()),
                (1, "2=".into()),
                (3, "4".into()),
            ]
        );
    }

    /// monoio at c64 on the reference VM: 0.11 syscalls but 2.000 io_uring submissions per
    /// request; epoll 2.11 syscalls and none. Charged for its submissions, monoio no longer
    /// ranks first; a run without the kernel counts ranks as before.
    #[test]
    fn io_uring_submissions_join_the_syscalls() {
        let stat = |v: f64| Stat {
            n: 3,
            median: v,
            min: v - 0.01,
            max: v + 0.01,
            ..Stat::default()
        };
        let summary = |sys: f64, uring: Option<f64>| {
            let mut k = CountedSummary::default();
            k.server.syscalls = Some(stat(sys));
            if let Some(u) = uring {
                k.server.kernel.insert(URING_SUBMISSIONS.into(), stat(u));
            }
            k
        };
        let (epoll, monoio) = (summary(2.11, Some(0.0)), summary(0.11, Some(2.0)));
        let costs = [Cost::of(Some(&monoio)), Cost::of(Some(&epoll))];
        assert_eq!(costs[0].syscalls.unwrap().median, 2.11);
        assert_eq!(
            labels(&costs),
            [(0, "1= (syscalls)".into()), (1, "1= (syscalls)".into())]
        );
        let old = [
            Cost::of(Some(&summary(0.11, None))),
            Cost::of(Some(&summary(2.11, None))),
        ];
        assert_eq!(
            labels(&old),
            [(0, "1 (syscalls)".into()), (1, "2 (syscalls)".into())]
        );
    }

    #[test]
    fn each_position_is_ranked_apart_and_uncounted_positions_are_left_out() {
        use crate::results::schema::CellSummary;
        let cell = |svc: &str, level: &str, ins: Option<f64>| {
            let mut c = CellSummary {
                key: format!("{svc}__{level}"),
                service: svc.into(),
                scenario: "ping".into(),
                level: level.into(),
                profile: "pinned".into(),
                ..CellSummary::default()
            };
            c.counted = ins.map(|v| CountedSummary {
                instructions: Some(Stat {
                    median: v,
                    min: v - 1.0,
                    max: v + 1.0,
                    ..Stat::default()
                }),
                ..CountedSummary::default()
            });
            c
        };
        let cells = [
            cell("b", "c1", Some(200.0)),
            cell("a", "c1", Some(100.0)),
            cell("u", "c1", None),
            cell("b", "c64", None),
            cell("a", "c64", None),
        ];
        let r = by_position(&cells);
        let got = |k: &str| r.get(k).map(|(o, p)| (*o, p.map(|p| p.label())));
        assert_eq!(got("a__c1"), Some((0, Some("1".into()))));
        assert_eq!(got("b__c1"), Some((1, Some("2".into()))));
        assert_eq!(got("u__c1"), Some((2, None)), "no count: last, no place");
        assert_eq!(got("a__c64"), None, "a position that counted nothing");
        assert_eq!(r.len(), 3);
    }
}
