//! The site's data: the index's (one row per result set with date, commit, machine, matrix,
//! cells, suspect count; a history per cell across the runs of one machine) and, apart from
//! it, the comparisons the compare view offers — every pair of runs (older as the baseline)
//! and every pair of services within a run — computed by the `compare` module exactly as
//! `matrix compare` does. A refused pair keeps its reasons and the forced comparison,
//! labelled as such. Each pair is its own file (`PAIR_FILES`), loaded when it is picked, so
//! the index grows with the runs, not with their pairs.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compare::{self, NotComparable, Options, comparable};
use crate::results::difference::NOISE_PCT;
use crate::results::schema::{CellSummary, Stat};
use crate::results::set::ResultSet;

/// One run the site covers and where its page is, relative to the index.
pub struct SiteRun<'a> {
    pub set: &'a ResultSet,
    pub page: String,
}

/// A result set that is not a matrix run (e.g. micro-benchmarks): listed, not rendered.
#[derive(Debug, Clone, Serialize)]
pub struct Other {
    pub path: String,
    pub note: String,
    pub href: Option<String>,
}

/// Where a pair's comparison is written, relative to the index, as templates the compare
/// view fills in: `{old}` `{new}` `{run}` are runs' `slug`s, `{a}` `{b}` positions in the
/// run's `services` (a < b). One script per pair, inserted as `<script src>` when the pair
/// is picked: that loads from `file://`, where `fetch()` does not.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PairFiles {
    pub runs: &'static str,
    pub services: &'static str,
}

pub const PAIR_FILES: PairFiles = PairFiles {
    runs: "compare/{old}__{new}.js",
    services: "compare/{run}/{a}__{b}.js",
};

#[derive(Debug, Serialize)]
pub struct SiteView {
    pub runs: Vec<RunRow>,
    pub others: Vec<Other>,
    pub noise_pct: f64,
    pub pair_files: PairFiles,
    /// machine → cell id ("service/scenario/level/profile") → one point per run.
    pub history: BTreeMap<String, BTreeMap<String, Vec<Point>>>,
}

/// The site: the index's data and every pair's comparison, each with its file.
pub struct Site {
    pub view: SiteView,
    pub pairs: Vec<Entry>,
}

#[derive(Debug, Serialize)]
pub struct RunRow {
    pub run_id: String,
    /// The run's name in its pairs' file names (the run id, file-name safe, unique).
    pub slug: String,
    pub page: String,
    pub started_unix_ms: Option<u64>,
    pub git_commit: Option<String>,
    pub machine: String,
    pub matrix: String,
    pub services: Vec<String>,
    pub cells: usize,
    pub failed: u32,
    pub suspect: u32,
    pub status: String,
    pub missing: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Entry {
    /// Where it is written, relative to the index (a `PAIR_FILES` template filled in).
    pub file: String,
    /// "runs" (two result sets) or "services" (two services of one run).
    pub kind: &'static str,
    pub old_run: String,
    pub new_run: String,
    pub old_service: Option<String>,
    pub new_service: Option<String>,
    /// Why `matrix compare` refuses this pair (empty: it compares).
    pub refused: Vec<String>,
    /// The comparison (`--force`d when refused), as `matrix compare --format json` writes
    /// it but without the per-repetition value lists.
    pub comparison: serde_json::Value,
    /// The same comparison as `matrix compare --format markdown` writes it (the view's
    /// Markdown export).
    pub markdown: String,
}

#[derive(Debug, Serialize)]
pub struct Point {
    pub run_id: String,
    pub started_unix_ms: Option<u64>,
    /// metric → [mean, ci95 low, ci95 high, repetitions] (the low/high absent for a point
    /// value, the repetitions where not known).
    pub metrics: BTreeMap<&'static str, [Option<f64>; 4]>,
    pub suspect: bool,
    /// Why `matrix compare` would not set this point beside the one before it (the run's
    /// method or the cell's load, pinning, limits or I/O differ): the history line breaks
    /// here. Empty: one line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_comparable: Vec<String>,
}

/// "CPU model × N CPUs @ host": the runs one history line may join.
pub fn machine(set: &ResultSet) -> String {
    set.run.as_ref().map_or_else(
        || "unknown machine (no run.json)".to_string(),
        |r| {
            let h = &r.environment.hardware;
            format!(
                "{} × {} CPUs @ {}",
                h.cpu_model, h.logical_cpus, r.environment.os.hostname
            )
        },
    )
}

fn services(set: &ResultSet) -> Vec<String> {
    crate::results::group::first_seen(set.results.cells.iter().map(|c| &c.service))
}

/// A run id as a file name: anything but ASCII letters, digits, `.`, `-` and `_` becomes
/// `_`, and a name already taken gets `-2`, `-3`, ….
fn slugs<'a>(ids: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let base: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() || base.starts_with('.') {
            format!("_{base}")
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 1;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.push(name);
    }
    out
}

fn fill(template: &str, subs: &[(&str, &str)]) -> String {
    subs.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{k}}}"), v)
    })
}

fn row(r: &SiteRun, slug: String) -> RunRow {
    let s = r.set;
    let run = s.run.as_ref();
    let scenarios = crate::results::group::first_seen(s.results.cells.iter().map(|c| &c.scenario));
    let svc = services(s);
    RunRow {
        run_id: s.results.run_id.clone(),
        slug,
        page: r.page.clone(),
        started_unix_ms: run.map(|r| r.started_unix_ms),
        git_commit: run.and_then(|r| r.environment.source.git_commit.clone()),
        machine: machine(s),
        matrix: format!(
            "{}{}: {} services × {} scenarios",
            run.map_or("unknown matrix", |r| r.config_path.as_str()),
            if run.is_some_and(|r| r.quick) {
                " --quick"
            } else {
                ""
            },
            svc.len(),
            scenarios.len()
        ),
        services: svc,
        cells: s.results.cells.len(),
        failed: s.results.failed_cells,
        suspect: s.results.suspect_cells,
        status: match crate::compare::comparable::replay_of(s) {
            Some(id) => format!("replay of {id}: not a measurement"),
            None => format!("{:?}", s.results.status).to_lowercase(),
        },
        missing: crate::export::html::run_view::missing(s),
    }
}

/// Drops every `"values": [...]` list (per-repetition samples): the view shows means,
/// intervals and verdicts, and the lists would multiply the index's size.
fn without_values(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("values");
            o.values_mut().for_each(without_values);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_values),
        _ => {}
    }
}

/// The comparison of two sides as `matrix compare` makes it (default noise threshold);
/// refused pairs are compared with `--force` and keep the refusal's reasons.
fn entry(
    file: String,
    kind: &'static str,
    old: &ResultSet,
    new: &ResultSet,
    services: Option<(&str, &str)>,
) -> Entry {
    let opt = |force| Options {
        noise_pct: NOISE_PCT,
        force,
    };
    let (refused, c) = match compare::compare(old, new, opt(false)) {
        Ok(c) => (Vec::new(), c),
        Err(NotComparable(reasons)) => (
            reasons,
            compare::compare(old, new, opt(true)).expect("a forced comparison is never refused"),
        ),
    };
    let markdown = compare::export::markdown::render(&c);
    let mut comparison = serde_json::to_value(&c).unwrap_or(serde_json::Value::Null);
    without_values(&mut comparison);
    Entry {
        file,
        kind,
        old_run: old.results.run_id.clone(),
        new_run: new.results.run_id.clone(),
        old_service: services.map(|s| s.0.to_string()),
        new_service: services.map(|s| s.1.to_string()),
        refused,
        comparison,
        markdown,
    }
}

/// One service of a run as a side of a comparison, under a service name both sides share so
/// the compare module pairs its cells with the other service's.
pub fn service_side(set: &ResultSet, service: &str, shared_name: &str) -> ResultSet {
    let mut results = set.results.clone();
    results.cells.retain(|c| c.service == service);
    for c in &mut results.cells {
        c.service = shared_name.to_string();
    }
    let run = set.run.as_ref().map(|r| {
        let mut r = r.clone();
        r.plan.retain(|c| c.service == service);
        r
    });
    ResultSet {
        label: format!("{} · {service}", set.results.run_id),
        dir: set.dir.clone(),
        results,
        run,
        cells: set
            .cells
            .iter()
            .filter(|(_, c)| c.cell.service == service)
            .map(|(k, c)| (k.clone(), c.clone()))
            .collect(),
    }
}

fn service_pairs(set: &ResultSet, slug: &str) -> Vec<Entry> {
    let svc = services(set);
    let mut out = Vec::new();
    for (i, a) in svc.iter().enumerate() {
        for (j, b) in svc.iter().enumerate().skip(i + 1) {
            let name = format!("{a} → {b}");
            let (old, new) = (service_side(set, a, &name), service_side(set, b, &name));
            let (i, j) = (i.to_string(), j.to_string());
            let file = fill(PAIR_FILES.services, &[("run", slug), ("a", &i), ("b", &j)]);
            out.push(entry(file, "services", &old, &new, Some((a, b))));
        }
    }
    out
}

fn stat(s: Option<&Stat>) -> [Option<f64>; 4] {
    s.map_or([None; 4], |s| {
        [Some(s.mean), s.ci95_low, s.ci95_high, Some(f64::from(s.n))]
    })
}

fn point_metrics(c: &CellSummary) -> BTreeMap<&'static str, [Option<f64>; 4]> {
    let lat = |f: fn(&crate::results::schema::LatencySummary) -> u64| {
        [c.latency.as_ref().map(|l| f(l) as f64), None, None, None]
    };
    BTreeMap::from([
        ("requests_per_s", stat(c.requests_per_s.as_ref())),
        (
            "cpu_us_per_request",
            stat(c.server_cpu_us_per_request.as_ref()),
        ),
        ("latency_p50_us", lat(|l| l.p50_us)),
        ("latency_p99_us", lat(|l| l.p99_us)),
        ("startup_us", stat(c.startup_us.as_ref())),
        ("idle_rss_bytes", stat(c.idle_rss_bytes.as_ref())),
    ])
}

fn history(runs: &[SiteRun]) -> BTreeMap<String, BTreeMap<String, Vec<Point>>> {
    // machine → cell → (run, its cell specs, the cell), in run order.
    type Line<'a> = Vec<(&'a ResultSet, usize, &'a CellSummary)>;
    let specs: Vec<_> = runs.iter().map(|r| comparable::specs(r.set)).collect();
    let mut lines: BTreeMap<String, BTreeMap<String, Line>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        let m = lines.entry(machine(r.set)).or_default();
        for c in &r.set.results.cells {
            let id = format!("{}/{}/{}/{}", c.service, c.scenario, c.level, c.profile);
            m.entry(id).or_default().push((r.set, i, c));
        }
    }
    let started = |s: &ResultSet| {
        (
            s.run.as_ref().map(|x| x.started_unix_ms),
            s.results.run_id.clone(),
        )
    };
    lines
        .into_iter()
        .map(|(machine, cells)| {
            let cells = cells
                .into_iter()
                .map(|(id, mut line)| {
                    line.sort_by_key(|(s, _, _)| started(s));
                    let points = (0..line.len())
                        .map(|k| {
                            let (set, i, c) = line[k];
                            let not_comparable = match k.checked_sub(1).map(|j| line[j]) {
                                Some((old, oi, o)) => comparable::cell_pair_differences(
                                    (old, specs[oi].get(&o.key), o),
                                    (set, specs[i].get(&c.key), c),
                                ),
                                None => Vec::new(),
                            };
                            Point {
                                run_id: set.results.run_id.clone(),
                                started_unix_ms: set.run.as_ref().map(|x| x.started_unix_ms),
                                metrics: point_metrics(c),
                                suspect: c.suspect,
                                not_comparable,
                            }
                        })
                        .collect();
                    (id, points)
                })
                .collect();
            (machine, cells)
        })
        .collect()
}

/// `runs` in any order; the index lists them oldest first.
pub fn build(runs: &[SiteRun], others: &[Other]) -> Site {
    let mut order: Vec<&SiteRun> = runs.iter().collect();
    order.sort_by_key(|r| {
        (
            r.set.run.as_ref().map(|x| x.started_unix_ms),
            r.set.results.run_id.clone(),
        )
    });
    let slug = slugs(order.iter().map(|r| r.set.results.run_id.as_str()));
    let mut pairs = Vec::new();
    for (i, old) in order.iter().enumerate() {
        for (j, new) in order.iter().enumerate().skip(i + 1) {
            let file = fill(PAIR_FILES.runs, &[("old", &slug[i]), ("new", &slug[j])]);
            pairs.push(entry(file, "runs", old.set, new.set, None));
        }
    }
    for (r, slug) in order.iter().zip(&slug) {
        pairs.extend(service_pairs(r.set, slug));
    }
    Site {
        view: SiteView {
            runs: order
                .iter()
                .zip(slug)
                .map(|(r, slug)| row(r, slug))
                .collect(),
            others: others.to_vec(),
            noise_pct: NOISE_PCT,
            pair_files: PAIR_FILES,
            history: history(runs),
        },
        pairs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::set;

    fn load(id: &str) -> ResultSet {
        set::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../results")
                .join(id),
        )
        .unwrap()
    }

    /// A `--fake-reps` replay is listed as one, and its pair with a measured run is refused.
    #[test]
    fn a_replay_is_listed_as_not_a_measurement_and_not_compared() {
        let old = load("2026-11-30T14-06-29Z-14f462b");
        let mut new = load("2026-11-30T14-14-58Z-14f462b");
        new.results.replay_of = Some(old.results.run_id.clone());
        let runs = [
            SiteRun {
                set: &old,
                page: "a/index.html".into(),
            },
            SiteRun {
                set: &new,
                page: "b/index.html".into(),
            },
        ];
        let site = build(&runs, &[]);
        let row = site
            .view
            .runs
            .iter()
            .find(|r| r.run_id == new.results.run_id)
            .unwrap();
        assert_eq!(
            row.status,
            format!("replay of {}: not a measurement", old.results.run_id)
        );
        let e = site.pairs.iter().find(|e| e.kind == "runs").unwrap();
        assert!(
            e.refused.iter().any(|r| r.contains("is a replay of run")),
            "{:?}",
            e.refused
        );
    }

    #[test]
    fn the_compare_entries_are_the_compare_modules_output_without_the_samples() {
        let old = load("2026-11-30T14-06-29Z-14f462b");
        let new = load("2026-11-30T14-14-58Z-14f462b");
        let runs = [
            SiteRun {
                set: &new,
                page: "b/index.html".into(),
            },
            SiteRun {
                set: &old,
                page: "a/index.html".into(),
            },
        ];
        let site = build(&runs, &[]);
        let v = &site.view;
        assert_eq!(v.runs[0].run_id, old.results.run_id, "oldest first");
        let e = site.pairs.iter().find(|e| e.kind == "runs").unwrap();
        assert_eq!(
            e.file,
            format!("compare/{}__{}.js", v.runs[0].slug, v.runs[1].slug)
        );
        let opts = Options {
            noise_pct: NOISE_PCT,
            force: !e.refused.is_empty(),
        };
        let c = compare::compare(&old, &new, opts).unwrap();
        let mut want = serde_json::to_value(&c).unwrap();
        without_values(&mut want);
        assert_eq!(e.comparison, want);
        assert_eq!(e.markdown, compare::export::markdown::render(&c));
        assert!(!e.comparison.to_string().contains("\"values\""));
        // Every pair of services of each run, once.
        let n = |s: &ResultSet| services(s).len();
        let pairs = |k: usize| k * (k - 1) / 2;
        assert_eq!(
            site.pairs.iter().filter(|e| e.kind == "services").count(),
            pairs(n(&old)) + pairs(n(&new))
        );
        // One file per pair; the index holds none of them.
        let mut files: Vec<&str> = site.pairs.iter().map(|e| e.file.as_str()).collect();
        files.sort();
        files.dedup();
        assert_eq!(files.len(), site.pairs.len());
        let s = site
            .pairs
            .iter()
            .find(|e| e.kind == "services" && e.old_run == old.results.run_id)
            .unwrap();
        assert_eq!(s.file, format!("compare/{}/0__1.js", v.runs[0].slug));
        let svc = services(&old);
        assert_eq!(s.old_service.as_deref(), Some(svc[0].as_str()));
        assert_eq!(s.new_service.as_deref(), Some(svc[1].as_str()));
        assert!(!serde_json::to_string(v).unwrap().contains("\"comparison\""));
        assert!(
            site.view
                .history
                .values()
                .flat_map(|m| m.values())
                .any(|p| p.len() == 2)
        );
    }

    #[test]
    fn slugs_are_file_names_and_unique() {
        assert_eq!(
            slugs(["2026-11-30T14-06-29Z-14f462b", "a/b c", "a_b_c", "", ".."]),
            [
                "2026-11-30T14-06-29Z-14f462b",
                "a_b_c",
                "a_b_c-2",
                "_",
                "_..",
            ]
        );
    }
}
