//! A reader's summary of a run: for each question people bring to it — the cheapest CPU work
//! per request, the highest throughput, the lowest p99 at a moderate load, the lowest memory,
//! the fastest start-up — the answer this run gives, or that it cannot tell the services
//! apart, with the measure that decided it and how sure that measure is. Computed once here
//! from the run's cells, so README's headline, results.md and the page say the same.
//!
//! An answer is the services of band 1 (the leader and every service the run cannot tell from
//! it, `bands`) at the run's headline position; when band 1 holds every service, the run cannot
//! tell them apart, and says so with the MDE of that measure.

use serde::Serialize;

use super::bands::{self, Bands};
use super::counted_rank;
use super::metric::Metric;
use super::schema::{CellResult, CellSummary, ResultsFile, Stat};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// "cheapest CPU work per request".
    pub question: String,
    /// The services that answer it (band 1), empty when the run cannot tell them apart or did
    /// not measure it.
    pub services: Vec<String>,
    /// "ping-epoll", "ping-monoio and ping-compio (tied)", "cannot be told apart here", or
    /// "not measured in this run (…)".
    pub answer: String,
    /// The measure and position that decided it.
    pub decided_by: String,
    /// How sure that measure is here.
    pub confidence: String,
}

impl Answer {
    /// One Markdown line, the same in README's headline and results.md.
    pub fn line(&self) -> String {
        let by = if self.decided_by.is_empty() {
            String::new()
        } else {
            format!(" — by {}", self.decided_by)
        };
        let sure = if self.confidence.is_empty() {
            String::new()
        } else {
            format!("; {}", self.confidence)
        };
        format!("- **{}**: {}{by}{sure}.", self.question, self.answer)
    }
}

fn closed(c: &CellSummary) -> bool {
    c.offered_rate_per_s.is_none() && c.churn.is_none()
}

/// Connections of a closed-loop level (`group::connections`), 0 for any other.
fn connections(level: &str) -> u32 {
    super::group::connections(level).unwrap_or(0)
}

/// Requests per second of an open-loop level (`r5000`): 5000.
fn rate(level: &str) -> u64 {
    level
        .strip_prefix('r')
        .and_then(|d| d.parse().ok())
        .unwrap_or(u64::MAX)
}

/// A service as an answer names it: the raw-epoll ceiling is said to be no runtime.
fn named(service: &str) -> String {
    if service == super::group::CEILING {
        format!("{service} (the no-runtime ceiling)")
    } else {
        service.to_owned()
    }
}

fn join(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| named(n)).collect();
    let names = names.as_slice();
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// The run's MDE of `m` at a position (its own calibration cell, else the first of the same
/// loop, said as borrowed).
fn mde(
    set: &ResultsFile,
    scenario: &str,
    level: &str,
    profile: &str,
    open: bool,
    m: Metric,
) -> String {
    let Some(cal) = &set.calibration else {
        return "MDE unknown: this run has no calibration".into();
    };
    let Some(cell) = cal.cell_for(scenario, level, profile, open) else {
        return "MDE unknown: no calibration of this kind of load".into();
    };
    let Some(x) = cell.metric(m).and_then(|x| x.mde_pct) else {
        return "MDE unknown".into();
    };
    let own = (cell.scenario.as_str(), cell.level.as_str()) == (scenario, level);
    let digits = if x < 1.0 { 3 } else { 0 };
    if own {
        format!("MDE {x:.digits$} %")
    } else {
        format!(
            "MDE {x:.digits$} %, borrowed from the calibration at {}/{}",
            cell.scenario, cell.level
        )
    }
}

/// Band 1 of `m` among `cells`, band 2, and how many were banded.
fn leaders(cells: &[&CellSummary], bands: &Bands, m: Metric) -> (Vec<String>, Vec<String>, usize) {
    let key = bands::name(m);
    let banded: Vec<(&CellSummary, u32)> = cells
        .iter()
        .filter_map(|c| Some((*c, *bands.get(&c.key)?.get(&key)?)))
        .collect();
    let band = |n: u32| {
        let mut v: Vec<String> = banded
            .iter()
            .filter(|(_, b)| *b == n)
            .map(|(c, _)| c.service.clone())
            .collect();
        v.sort();
        v
    };
    (band(1), band(2), banded.len())
}

/// The answer's words: the leaders ("tied" words when several), and where the only leader
/// is the no-runtime ceiling, the runtimes that come next (what a reader choosing one wants).
fn worded(first: &[String], next: &[String], tied: &str) -> String {
    let tie = |v: &[String]| if v.len() > 1 { tied } else { "" };
    let mut s = format!("{}{}", join(first), tie(first));
    if first.len() == 1 && first[0] == super::group::CEILING && !next.is_empty() {
        s += &format!("; among runtimes, {}{}", join(next), tie(next));
    }
    s
}

/// A question answered by band 1 of `m` at a position.
#[allow(clippy::too_many_arguments)]
fn by_band(
    set: &ResultsFile,
    bands: &Bands,
    question: &str,
    cells: &[&CellSummary],
    m: Metric,
    measure: &str,
    open: bool,
) -> Answer {
    let Some(first) = cells.first() else {
        return not_measured(question, "no such cells");
    };
    let (scenario, level, profile) = (&first.scenario, &first.level, &first.profile);
    let (services, next, banded) = leaders(cells, bands, m);
    let at = format!("{scenario}/{level}/{profile}");
    let mde = mde(set, scenario, level, profile, open, m);
    if banded < 2 {
        return not_measured(question, "fewer than two services measured it");
    }
    let (answer, services) = if services.len() == banded {
        ("cannot be told apart here".to_owned(), vec![])
    } else {
        (
            worded(&services, &next, " (the run cannot tell them apart)"),
            services,
        )
    };
    Answer {
        question: question.into(),
        services,
        answer,
        decided_by: format!("{measure} at {at}"),
        confidence: format!("{mde}; {banded} services measured"),
    }
}

fn not_measured(question: &str, why: &str) -> Answer {
    Answer {
        question: question.into(),
        services: vec![],
        answer: format!("not measured in this run ({why})"),
        decided_by: String::new(),
        confidence: String::new(),
    }
}

/// How the counts repeated: the largest per-repetition CV among the exact ones, and the
/// services whose count is not exact (`counted::not_exact`) named apart with theirs.
fn cv_within(stats: &[(&str, &Stat)]) -> Option<String> {
    let worst = stats
        .iter()
        .filter(|(_, s)| !super::counted::not_exact(s))
        .filter_map(|(_, s)| s.cv)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))?;
    let mut out = format!("repeating within {:.2} % CV", worst * 100.0);
    for (service, s) in stats.iter().filter(|(_, s)| super::counted::not_exact(s)) {
        out += &format!(
            " but {service}'s ({:.1} % CV: not exact)",
            s.cv.unwrap_or_default() * 100.0
        );
    }
    Some(out)
}

/// The cheapest counted work per request: README's headline rule (`counted_rank`) at the
/// level where instructions were counted, else the first level that counted syscalls.
fn cheapest_work(set: &ResultsFile, cells: &[&CellSummary]) -> Answer {
    const Q: &str = "cheapest CPU work per request";
    let mut levels: Vec<&str> = cells.iter().map(|c| c.level.as_str()).collect();
    levels.sort_by_key(|l| connections(l));
    levels.dedup();
    let counted = |l: &str, ins: bool| {
        cells.iter().any(|c| {
            c.level == l
                && c.counted.as_ref().is_some_and(|k| {
                    if ins {
                        k.instructions.is_some()
                    } else {
                        k.server.syscalls.is_some()
                    }
                })
        })
    };
    let Some(level) = levels
        .iter()
        .find(|l| counted(l, true))
        .or_else(|| levels.iter().find(|l| counted(l, false)))
    else {
        return not_measured(
            Q,
            "no counts: run with count_syscalls or --count-instructions",
        );
    };
    let here: Vec<CellSummary> = cells
        .iter()
        .filter(|c| c.level == *level)
        .map(|c| (*c).clone())
        .collect();
    let places = counted_rank::by_position(&here);
    let at_rank = |rank: usize| {
        let mut v: Vec<String> = here
            .iter()
            .filter(|c| {
                places
                    .get(&c.key)
                    .and_then(|p| p.1)
                    .is_some_and(|p| p.rank == rank)
            })
            .map(|c| c.service.clone())
            .collect();
        v.sort();
        v
    };
    let first = at_rank(1);
    // Ties share the rank of their first (1=, 1=, 3): the next rank is one past the leaders.
    let next = at_rank(first.len() + 1);
    let ranked = here
        .iter()
        .filter(|c| places.get(&c.key).and_then(|p| p.1).is_some())
        .count();
    let ins = counted(level, true);
    let f = &here[0];
    let at = format!("{}/{}/{}", f.scenario, level, f.profile);
    let measure = if ins {
        "user-space instructions per request, then syscalls per request"
    } else {
        "syscalls per request"
    };
    let stats: Vec<(&str, &Stat)> = here
        .iter()
        .filter_map(|c| {
            let k = c.counted.as_ref()?;
            let s = if ins {
                k.instructions.as_ref()
            } else {
                k.server.syscalls.as_ref()
            }?;
            Some((c.service.as_str(), s))
        })
        .collect();
    let m = if ins {
        Metric::InstructionsPerRequest
    } else {
        Metric::SyscallsPerRequest
    };
    let confidence = [
        cv_within(&stats),
        Some(mde(set, &f.scenario, level, &f.profile, false, m)),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join("; ");
    let (answer, services) = if ranked < 2 {
        return not_measured(Q, "fewer than two services counted");
    } else if first.len() == ranked {
        ("cannot be told apart here".to_owned(), vec![])
    } else {
        (worded(&first, &next, " (tied)"), first)
    };
    Answer {
        question: Q.into(),
        services,
        answer,
        decided_by: format!("{measure} at {at}"),
        confidence: format!("exact counts, {confidence}"),
    }
}

/// The run's answers, at its headline position: the "ping" scenario (or the first
/// closed-loop one) and its first profile; throughput at its most connections; p99 at the
/// lowest offered rate of the open-loop scenario of that profile, where there is one.
pub fn of<'a>(set: &ResultsFile, files: impl IntoIterator<Item = &'a CellResult>) -> Vec<Answer> {
    let cells: Vec<&CellSummary> = set
        .cells
        .iter()
        .filter(|c| c.status.is_none_or(|s| s == super::schema::CellStatus::Ok))
        .collect();
    let Some(first) = cells
        .iter()
        .filter(|c| closed(c))
        .find(|c| c.scenario == "ping")
        .or_else(|| cells.iter().find(|c| closed(c)))
    else {
        return vec![];
    };
    let (scenario, profile) = (first.scenario.clone(), first.profile.clone());
    let bands = bands::of(files);
    let here: Vec<&CellSummary> = cells
        .iter()
        .copied()
        .filter(|c| closed(c) && c.scenario == scenario && c.profile == profile)
        .collect();
    let at_level = |level: &str| -> Vec<&CellSummary> {
        here.iter().copied().filter(|c| c.level == level).collect()
    };
    let most = here
        .iter()
        .max_by_key(|c| connections(&c.level))
        .map(|c| c.level.clone())
        .unwrap_or_default();
    let fewest = here
        .iter()
        .min_by_key(|c| connections(&c.level))
        .map(|c| c.level.clone())
        .unwrap_or_default();
    let open: Vec<&CellSummary> = cells
        .iter()
        .copied()
        .filter(|c| c.offered_rate_per_s.is_some() && c.profile == profile)
        .collect();
    let p99 = match open.iter().min_by_key(|c| rate(&c.level)) {
        Some(low) => {
            let at: Vec<&CellSummary> = open
                .iter()
                .copied()
                .filter(|c| c.scenario == low.scenario && c.level == low.level)
                .collect();
            by_band(
                set,
                &bands,
                "lowest p99 latency at a moderate load",
                &at,
                Metric::LatencyP99Us,
                "p99 latency from intended send times (median over repetitions)",
                true,
            )
        }
        None => not_measured(
            "lowest p99 latency at a moderate load",
            "no open-loop scenario: latency at equal offered load needs one",
        ),
    };
    vec![
        cheapest_work(set, &here),
        by_band(
            set,
            &bands,
            "highest throughput",
            &at_level(&most),
            Metric::RequestsPerS,
            "req/s (mean over repetitions)",
            false,
        ),
        p99,
        by_band(
            set,
            &bands,
            "lowest memory",
            &at_level(&fewest),
            Metric::IdleRssBytes,
            "idle RSS after start-up (mean over every start)",
            false,
        ),
        by_band(
            set,
            &bands,
            "fastest start-up",
            &at_level(&fewest),
            Metric::StartupUs,
            "exec to first 200 (mean over every start)",
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counted_reference_answers_each_question_or_says_it_cannot() {
        let set = crate::results::set::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../results/2026-12-04T06-11-06Z-7357b8a"),
        )
        .unwrap();
        let a = of(&set.results, set.cells.values());
        let q: Vec<&str> = a.iter().map(|a| a.question.as_str()).collect();
        assert_eq!(
            q,
            [
                "cheapest CPU work per request",
                "highest throughput",
                "lowest p99 latency at a moderate load",
                "lowest memory",
                "fastest start-up"
            ]
        );
        for x in &a {
            assert!(!x.answer.is_empty() && !x.decided_by.is_empty(), "{x:?}");
            assert!(x.confidence.contains("MDE"), "{x:?}");
            assert_eq!(
                x.services.is_empty(),
                x.answer.starts_with("cannot") || x.answer.starts_with("not measured"),
                "{x:?}"
            );
        }
        assert!(
            a[0].line()
                .starts_with("- **cheapest CPU work per request**: ")
        );
    }

    #[test]
    fn names_join_as_prose() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(join(&s(&["a"])), "a");
        assert_eq!(join(&s(&["a", "b"])), "a and b");
        assert_eq!(join(&s(&["a", "b", "c"])), "a, b, and c");
        assert_eq!((connections("c64"), rate("r5000")), (64, 5000));
    }
}
