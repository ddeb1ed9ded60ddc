//! The run page's data: the run record's essentials (machine, commit, floors), the
//! calibration, every cell's summary with what the page derives for it (CPU per request as
//! a multiple of the no-runtime ceiling, its verdict against the baseline, its rank bands),
//! each service's runtime as its start-up line states it, each cell's detail, and — in plain
//! words — what this run does not have, so an older or partial run renders and says so.

use std::collections::BTreeMap;

use serde::Serialize;

use super::detail;
use crate::results::bands;
use crate::results::calibration::Calibration;
use crate::results::counted_rank;
use crate::results::group::{self, CEILING};
use crate::results::schema::{CellStatus, CellSummary, Drift, Floors, Hardware, Os, RunStatus};
use crate::results::set::ResultSet;
use crate::results::trust;
use crate::results::verdict::BaselineVerdict;

#[derive(Debug, Serialize)]
pub struct RunView<'a> {
    pub run_id: &'a str,
    pub schema_version: u32,
    pub status: RunStatus,
    pub run: Option<RunInfo<'a>>,
    /// What the page cannot show, and why (empty: a complete run).
    pub missing: Vec<String>,
    /// Whether the machine was quiet enough for the run's times (`results::trust`).
    pub machine: String,
    /// The reader's summary (`results::answers`), as README's headline and results.md give it.
    pub answers: Vec<crate::results::answers::Answer>,
    /// When a count is marked not exact, and what that means (`results::counted`).
    pub not_exact: NotExact,
    /// Each profile of the recorded matrix file in words (`export::profiles`): CPUs, quota,
    /// memory limit and what they do to the numbers; shown beside the profile's tab.
    pub profiles: BTreeMap<String, String>,
    pub baseline: Option<&'a str>,
    pub ceiling: &'static str,
    pub drift: Option<&'a Drift>,
    pub calibration: Option<&'a Calibration>,
    pub services: BTreeMap<String, ServiceInfo>,
    pub cells: Vec<CellView<'a>>,
    pub details: BTreeMap<&'a str, detail::Detail<'a>>,
    /// The metric definitions (`results::metric::DEFINITIONS`): the page's columns, labels,
    /// directions and where each cell keeps each value come from here, not from the script.
    pub metrics: &'static [crate::results::metric::Definition],
    /// Services not run in a scenario because they do not serve its protocol: "n/a" rows
    /// under the scenario's board (absent from a page of a run without any).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_applicable: Vec<NotApplicableView>,
}

#[derive(Debug, Serialize)]
pub struct RunInfo<'a> {
    pub started_unix_ms: u64,
    pub finished_unix_ms: Option<u64>,
    pub command_line: &'a [String],
    pub quick: bool,
    pub config_path: &'a str,
    pub git_commit: Option<&'a str>,
    pub git_dirty: Option<bool>,
    pub hardware: &'a Hardware,
    pub os: &'a Os,
    pub loadgen_version: Option<&'a str>,
    pub rustc: &'a str,
    pub build_profile: &'a str,
    pub provenance: &'a str,
    pub floors: Option<&'a Floors>,
    pub provenance_warnings: &'a [String],
}

/// A service's runtime, from its start-up line.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceInfo {
    pub runtime: String,
    pub runtime_version: String,
    pub http: String,
    pub model: String,
    pub io_driver: String,
    pub workers: usize,
}

#[derive(Debug, Serialize)]
pub struct CellView<'a> {
    #[serde(flatten)]
    pub summary: &'a CellSummary,
    pub open: bool,
    /// Server CPU per request ÷ the ceiling service's at the same position.
    pub ceiling_x: Option<f64>,
    pub verdict: Option<&'a BaselineVerdict>,
    pub bands: BTreeMap<String, u32>,
    /// Its place by counted cost at its position (`results::counted_rank`, README's
    /// headline's rule), where the position counted: the board's default order.
    pub counted_rank: Option<CountedRank>,
    pub has_detail: bool,
}

#[derive(Debug, Serialize)]
pub struct NotExact {
    pub cv: f64,
    pub why: &'static str,
}

#[derive(Debug, Serialize)]
pub struct CountedRank {
    /// Its order at the position, from 0.
    pub order: usize,
    /// "2=", "1= (syscalls)"; absent for a cell with no count.
    pub place: Option<String>,
}

fn run_info(set: &ResultSet) -> Option<RunInfo<'_>> {
    let r = set.run.as_ref()?;
    let e = &r.environment;
    Some(RunInfo {
        started_unix_ms: r.started_unix_ms,
        finished_unix_ms: r.finished_unix_ms,
        command_line: &r.command_line,
        quick: r.quick,
        config_path: &r.config_path,
        git_commit: e.source.git_commit.as_deref(),
        git_dirty: e.source.git_dirty,
        hardware: &e.hardware,
        os: &e.os,
        loadgen_version: e.loadgen_version.as_deref(),
        rustc: &e.toolchain.rustc_build,
        build_profile: &e.toolchain.build_profile,
        provenance: &e.provenance.note,
        floors: r.floors.as_ref(),
        provenance_warnings: &e.provenance_warnings,
    })
}

fn services(set: &ResultSet) -> BTreeMap<String, ServiceInfo> {
    let mut m = BTreeMap::new();
    for c in set.cells.values() {
        let Some(b) = &c.startup_line else { continue };
        m.entry(c.cell.service.clone())
            .or_insert_with(|| ServiceInfo {
                runtime: b.runtime.clone(),
                runtime_version: b.runtime_version.clone(),
                http: b.http.clone(),
                model: serde_json::to_value(b.model)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
                io_driver: b.io_driver.clone(),
                workers: b.workers,
            });
    }
    m
}

/// What this run lacks, in the words the page shows.
pub fn missing(set: &ResultSet) -> Vec<String> {
    let r = &set.results;
    let mut m = Vec::new();
    match &set.run {
        None => m.push("no run.json: the machine, commit, floors and plan are unknown".into()),
        Some(run) => match &run.floors {
            None => m.push(
                "no floors: the run predates the harness's floor measurement (start-up and timer floors unknown)"
                    .into(),
            ),
            Some(f) if f.machine.is_none() => m.push(
                "no machine floor (timer wake-up lateness): the run predates it".into(),
            ),
            Some(_) => {}
        },
    }
    if r.calibration.is_none() {
        m.push(
            "no calibration: the minimum detectable effect per metric is unknown; ties are drawn from the run's paired intervals alone"
                .into(),
        );
    }
    if r.baseline.is_none() {
        m.push("no baseline verdicts: the run predates `baseline` (no service-against-baseline intervals)".into());
    }
    let without_file = r
        .cells
        .iter()
        .filter(|c| !set.cells.contains_key(&c.key))
        .count();
    if without_file > 0 {
        m.push(format!(
            "{without_file} of {} cells have no cells/<key>.json: no repetitions, no rank bands for them",
            r.cells.len()
        ));
    }
    let no_line = r
        .cells
        .iter()
        .filter(|c| {
            set.cells
                .get(&c.key)
                .is_some_and(|f| f.startup_line.is_none())
        })
        .count();
    if no_line > 0 {
        m.push(format!(
            "{no_line} cells recorded no start-up line: their runtime model and I/O driver are unknown"
        ));
    }
    let not_ok = r
        .cells
        .iter()
        .filter(|c| !matches!(c.status, None | Some(CellStatus::Ok)))
        .count();
    if not_ok > 0 {
        m.push(format!(
            "{not_ok} cells did not complete (failed, unsupported, partial or interrupted): their metrics are absent, not zero"
        ));
    }
    m
}

pub fn build(set: &ResultSet) -> RunView<'_> {
    let r = &set.results;
    let bands = bands::of(set.cells.values());
    let counted_rank = counted_rank::by_position(&r.cells);
    let groups = group::groups(&r.cells);
    let ceiling_x = |c: &CellSummary| {
        let open = c.offered_rate_per_s.is_some();
        groups
            .iter()
            .find(|g| g.scenario == c.scenario && g.profile == c.profile && g.open == open)
            .and_then(|g| g.ceiling_ratio(c))
            .filter(|_| c.service != CEILING)
    };
    let cells = r
        .cells
        .iter()
        .map(|c| CellView {
            summary: c,
            open: c.offered_rate_per_s.is_some(),
            ceiling_x: ceiling_x(c),
            verdict: r.verdicts.iter().find(|v| v.key == c.key),
            bands: bands.get(&c.key).cloned().unwrap_or_default(),
            counted_rank: counted_rank.get(&c.key).map(|&(order, place)| CountedRank {
                order,
                place: place.map(|p| p.label()),
            }),
            has_detail: set.cells.contains_key(&c.key),
        })
        .collect();
    RunView {
        run_id: &r.run_id,
        schema_version: r.schema_version,
        status: r.status,
        run: run_info(set),
        missing: missing(set),
        machine: trust::line(r, set.run.as_ref()),
        answers: crate::results::answers::of(r, set.cells.values()),
        not_exact: NotExact {
            cv: crate::results::counted::EXACT_CV,
            why: crate::results::counted::NOT_EXACT,
        },
        profiles: set
            .run
            .as_ref()
            .map(|run| {
                crate::export::profiles::describe(&run.config_toml)
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default(),
        baseline: r.baseline.as_deref(),
        ceiling: CEILING,
        drift: r.drift.as_ref(),
        calibration: r.calibration.as_ref(),
        services: services(set),
        cells,
        details: r
            .cells
            .iter()
            .filter_map(|c| Some((c.key.as_str(), detail::of(set.cells.get(&c.key)?))))
            .collect(),
        metrics: &crate::results::metric::DEFINITIONS,
        not_applicable: set
            .run
            .iter()
            .flat_map(|run| &run.not_applicable)
            .map(|n| NotApplicableView {
                service: n.service.clone(),
                scenario: n.scenario.clone(),
                words: n.words(),
            })
            .collect(),
    }
}

/// A service not run in a scenario, as the page shows it.
#[derive(Debug, Serialize)]
pub struct NotApplicableView {
    pub service: String,
    pub scenario: String,
    /// "n/a: ping-epoll does not serve h2c".
    pub words: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::set;

    fn reference() -> ResultSet {
        set::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../results/2026-12-01T06-28-28Z-492c110"),
        )
        .unwrap()
    }

    #[test]
    fn a_complete_run_lacks_nothing_and_names_each_services_runtime() {
        let s = reference();
        assert!(missing(&s).is_empty(), "{:?}", missing(&s));
        let v = build(&s);
        assert_eq!(v.services["ping-compio"].io_driver, "io_uring");
        assert_eq!(v.services["ping-axum"].model, "work-stealing");
        assert_eq!(v.cells.len(), s.results.cells.len());
        assert!(v.cells.iter().any(|c| c.ceiling_x.is_some()));
        assert!(
            v.cells
                .iter()
                .all(|c| c.summary.service != CEILING || c.ceiling_x.is_none())
        );
    }

    #[test]
    fn an_older_or_partial_run_says_what_it_lacks_and_still_renders() {
        let mut s = reference();
        s.run = None;
        s.results.calibration = None;
        s.results.baseline = None;
        let first = s.results.cells[0].key.clone();
        s.cells.remove(&first);
        s.results.cells[1].status = Some(CellStatus::Unsupported);
        let m = missing(&s).join("\n");
        for want in [
            "no run.json",
            "no calibration",
            "no baseline",
            "1 of 81 cells have no cells/<key>.json",
            "1 cells did not complete",
        ] {
            assert!(m.contains(want), "{want:?} not in {m}");
        }
        let html = crate::export::html::run_page(&s).unwrap();
        assert!(html.contains("no run.json"));
    }
}
