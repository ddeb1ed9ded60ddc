//! The headline's rank by counted cost: services ordered by user-space instructions per
//! request, then by syscalls per request, where services whose counts overlap over their
//! repetitions share a rank (a tie, never an order). Services without an instruction count
//! are ranked after them, among themselves, by syscalls alone: an unmeasured count is never
//! read as 0, and a syscall count is not set against an instruction count.

use crate::results::schema::Stat;

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
}
