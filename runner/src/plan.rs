//! Expanding a validated matrix into cells, in execution order, with a time budget.
//!
//! Cells are grouped by (scenario, level, profile); inside a group every service runs
//! repetition 1, then every service runs repetition 2, … so slow drift of the machine hits
//! all services alike instead of whichever happened to run last. Calibration groups (one
//! service as two identical arms) come first; the drift reference re-runs at evenly spaced
//! points through the run.

use std::fmt::Write as _;

use crate::config::{CalibrationDef, Level, Matrix, ProfileDef, ScenarioDef, ServiceDef, Timing};
use crate::results::adaptive::Adaptive;
use crate::results::schema::{CellSpec, NotApplicable};
use crate::results::units::min_sec;

/// Estimated fixed cost of one service start: spawn, first 200, verification, stop, port check.
pub const START_OVERHEAD_MS: u64 = 400;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub quick: bool,
    /// `--only` filters: "service=a,b", "scenario=x", "profile=p", "level=c64", or a bare
    /// name matching any of them. Different dimensions AND, values within one OR.
    pub only: Vec<String>,
    /// `--target-ci`: adaptive repetitions, over `target_ci_pct` of the file.
    pub target_ci_pct: Option<f64>,
    pub calibration: Calibrate,
    /// `--count-instructions`: its Valgrind runs after each c1 repetition are in the estimate.
    pub count_instructions: bool,
}

/// Whether the plan holds the calibration arms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Calibrate {
    /// When the file has `[calibration]` (`matrix run`).
    #[default]
    AsConfigured,
    /// Only the calibration, from `[calibration]` or, without it, the baseline service at
    /// the first closed-loop and the first open-loop cell of the plan (`matrix calibrate`).
    Only,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// Groups in execution order; each holds one cell per service.
    pub groups: Vec<Vec<CellSpec>>,
    /// Calibration groups, run first: each holds the two arms of one cell.
    pub calibration: Vec<Vec<CellSpec>>,
    /// Re-run through the run to measure drift.
    pub reference: Option<CellSpec>,
    /// Re-runs of `reference`, evenly spaced, the last at the end.
    pub drift_points: u32,
    /// The service the others are judged against.
    pub baseline: String,
    /// Why the closed- and open-loop repetitions are not followed by the exact syscall
    /// count; None: they are.
    pub syscalls_off: Option<&'static str>,
    /// `--count-instructions`: the cells it counts ([`CellSpec::counts_instructions`]) are
    /// followed by Valgrind's two runs, which the estimate includes.
    pub count_instructions: bool,
    /// The (service, scenario) pairs not run because the service does not serve the
    /// scenario's protocol.
    pub not_applicable: Vec<NotApplicable>,
}

/// Estimated wall time of one repetition of `c`, in ms, with the exact syscall count after
/// it if `count_syscalls` (churn repetitions have none) and Valgrind's instruction count if
/// `count_instructions` and the cell is one it counts.
fn rep_ms(c: &CellSpec, count_syscalls: bool, count_instructions: bool) -> u64 {
    let valgrind = if count_instructions && c.counts_instructions() {
        crate::count::valgrind::ESTIMATE_MS
    } else {
        0
    };
    valgrind + measured_rep_ms(c, count_syscalls)
}

fn measured_rep_ms(c: &CellSpec, count_syscalls: bool) -> u64 {
    let load_ms = match &c.churn {
        Some(ch) => crate::churn::estimate_ms(ch),
        None if count_syscalls => c.warmup_ms + c.duration_ms + crate::count::exact::ESTIMATE_MS,
        None => c.warmup_ms + c.duration_ms,
    };
    load_ms + c.cooldown_ms + START_OVERHEAD_MS
}

impl Plan {
    /// The matrix's cells (not the calibration arms, also not those run in a group).
    pub fn cells(&self) -> impl Iterator<Item = &CellSpec> {
        self.groups.iter().flatten().filter(|c| c.arm.is_none())
    }

    /// Calibration groups, then the groups: everything that writes a cell file.
    pub fn all_cells(&self) -> impl Iterator<Item = &CellSpec> {
        self.calibration
            .iter()
            .flatten()
            .chain(self.groups.iter().flatten())
    }

    pub fn cell_count(&self) -> usize {
        self.all_cells().count()
    }

    /// Group indices (1-based, counted after that many matrix groups) after which the
    /// reference re-runs: `drift_points` of them, evenly spaced, the last after the last.
    pub fn drift_after(&self) -> Vec<usize> {
        let (g, k) = (self.groups.len(), self.drift_points as usize);
        if self.reference.is_none() || g == 0 || k == 0 {
            return Vec::new();
        }
        let mut at: Vec<usize> = (1..=k).map(|j| (j * g).div_ceil(k)).collect();
        at.dedup();
        at
    }

    fn drift_reps(&self) -> u64 {
        self.drift_after().len() as u64
    }

    /// Service starts planned: the fixed repetitions of every cell plus the drift re-runs.
    pub fn rep_count(&self) -> u64 {
        self.all_cells()
            .map(|c| u64::from(c.repetitions))
            .sum::<u64>()
            + self.drift_reps()
    }

    /// Service starts at most: adaptive cells at their cap.
    pub fn max_rep_count(&self) -> u64 {
        self.all_cells()
            .map(|c| u64::from(c.max_repetitions()))
            .sum::<u64>()
            + self.drift_reps()
    }

    /// Wall-time estimate in seconds (cells at their fixed repetitions).
    pub fn estimate_s(&self) -> f64 {
        self.time_s(|c| c.repetitions)
    }

    /// Wall time in seconds if every adaptive cell ran to its cap.
    pub fn worst_case_s(&self) -> f64 {
        self.time_s(CellSpec::max_repetitions)
    }

    fn time_s(&self, reps: impl Fn(&CellSpec) -> u32) -> f64 {
        let ms: u64 = self
            .all_cells()
            .map(|c| {
                rep_ms(c, self.syscalls_off.is_none(), self.count_instructions) * u64::from(reps(c))
            })
            .sum::<u64>()
            + self.reference.as_ref().map_or(0, |c| {
                rep_ms(c, self.syscalls_off.is_none(), self.count_instructions)
            }) * self.drift_reps();
        ms as f64 / 1000.0
    }
}

pub fn cell_key(service: &str, scenario: &str, level: &str, profile: &str) -> String {
    format!("{service}__{scenario}__{level}__{profile}")
}

struct Filter {
    dims: Vec<(Option<String>, Vec<String>)>,
}

impl Filter {
    fn new(only: &[String]) -> anyhow::Result<Filter> {
        let mut dims = Vec::new();
        for f in only {
            let (dim, vals) = match f.split_once('=') {
                Some((d, v)) => {
                    let d = d.trim();
                    if !["service", "scenario", "profile", "level"].contains(&d) {
                        anyhow::bail!(
                            "--only {f:?}: unknown dimension {d:?} (use service=, scenario=, profile= or level=)"
                        );
                    }
                    (Some(d.to_string()), v)
                }
                None => (None, f.as_str()),
            };
            dims.push((dim, vals.split(',').map(|s| s.trim().to_string()).collect()));
        }
        Ok(Filter { dims })
    }

    /// "; service=typo matches no service of this selection (there are: a, b)" for each
    /// filter value no cell of `offered` has, or nothing when each matches some cell.
    fn unmatched(&self, offered: &[CellSpec]) -> String {
        let mut out = String::new();
        for (dim, vals) in &self.dims {
            let dims: &[&str] = match dim.as_deref() {
                Some(d) => &[d][..],
                None => &["service", "scenario", "profile", "level"],
            };
            let value = |c: &CellSpec, d: &str| -> String {
                match d {
                    "service" => c.service.clone(),
                    "scenario" => c.scenario.clone(),
                    "profile" => c.profile.clone(),
                    _ => c.level.clone(),
                }
            };
            for v in vals {
                if offered
                    .iter()
                    .any(|c| dims.iter().any(|d| value(c, d) == *v))
                {
                    continue;
                }
                if dim.is_none() {
                    out += &format!(
                        "; {v} is no service, scenario, profile or level of this selection"
                    );
                    continue;
                }
                for d in dims {
                    let mut there: Vec<String> = offered.iter().map(|c| value(c, d)).collect();
                    there.sort();
                    there.dedup();
                    out += &format!(
                        "; {d}={v} matches no {d} of this selection (there are: {})",
                        there.join(", ")
                    );
                }
            }
        }
        out
    }

    fn keep(&self, c: &CellSpec) -> bool {
        self.dims.iter().all(|(dim, vals)| {
            let v = |x: &str| vals.iter().any(|v| v == x);
            match dim.as_deref() {
                Some("service") => v(&c.service),
                Some("scenario") => v(&c.scenario),
                Some("profile") => v(&c.profile),
                Some("level") => v(&c.level),
                _ => v(&c.service) || v(&c.scenario) || v(&c.profile) || v(&c.level),
            }
        })
    }

    /// Whether the selection keeps `c` and names both its service and its scenario: it asks
    /// for that pair.
    fn names_both(&self, c: &CellSpec) -> bool {
        let named = |dim: &str, x: &str| {
            self.dims
                .iter()
                .any(|(d, vals)| d.as_deref() == Some(dim) && vals.iter().any(|v| v == x))
        };
        self.keep(c) && named("service", &c.service) && named("scenario", &c.scenario)
    }
}

/// What every cell of this plan shares: windows, repetitions and adaptive settings.
struct Shared<'m> {
    m: &'m Matrix,
    timing: Timing,
    adaptive: Option<Adaptive>,
}

impl Shared<'_> {
    fn spec(
        &self,
        s: &ServiceDef,
        scenario: &ScenarioDef,
        level: &Level,
        profile: &ProfileDef,
        arm: Option<&str>,
    ) -> CellSpec {
        let key = cell_key(&s.name, &scenario.name, &level.label, &profile.name);
        CellSpec {
            key: match arm {
                Some(a) => format!("calibration-{a}__{key}"),
                None => key,
            },
            service: s.name.clone(),
            scenario: scenario.name.clone(),
            level: level.label.clone(),
            profile: profile.name.clone(),
            path: scenario.path.clone(),
            load: level.model.clone(),
            keepalive: scenario.keepalive,
            headers: scenario.headers.clone(),
            protocol: scenario.protocol,
            loadgen_threads: self.m.loadgen_threads,
            repetitions: self.timing.repetitions,
            warmup_ms: self.timing.warmup_ms,
            duration_ms: self.timing.duration_ms,
            cooldown_ms: self.timing.cooldown_ms,
            request_timeout_ms: self.m.request_timeout_ms,
            expect_body_bytes: scenario.expect_body_bytes,
            limits: profile.limits.clone(),
            service_args: service_args(s, scenario.protocol),
            churn: level.churn,
            hosts: profile.placement.clone(),
            // Churn cells have no primary metric to aim a CI at.
            adaptive: self.adaptive.filter(|_| level.churn.is_none()),
            arm: arm.map(str::to_string),
            external: s.external,
        }
    }

    /// Every (scenario, level, profile) of the matrix, in plan order.
    fn cells(&self) -> Vec<(&ScenarioDef, &Level, &ProfileDef)> {
        let mut out = Vec::new();
        for profile in &self.m.profiles {
            for scenario in &self.m.scenarios {
                if let Some(ps) = &scenario.profiles
                    && !ps.contains(&profile.name)
                {
                    continue;
                }
                for level in &scenario.levels {
                    out.push((scenario, level, profile));
                }
            }
        }
        out
    }
}

/// The service's arguments for `protocol`: a suite service is told to serve h2c.
fn service_args(s: &ServiceDef, protocol: loadgen::Protocol) -> Vec<String> {
    let mut args = s.args.clone();
    if !protocol.is_http11() && !s.external {
        args.extend(["--protocol".to_string(), protocol.name().to_string()]);
    }
    args
}

/// Whether `s` serves `protocol`: HTTP/1.1 every service does; another, a suite service
/// whose services.toml entry lists it (a server the suite did not write declares nothing but
/// HTTP/1.1).
pub fn serves(s: &ServiceDef, protocol: loadgen::Protocol) -> bool {
    if protocol.is_http11() {
        return true;
    }
    let binary = s.variant.as_ref().map_or_else(
        || {
            s.binary
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or(&s.name)
                .to_string()
        },
        |v| v.binary_name.clone(),
    );
    !s.external && ping_catalogue::find(&binary).is_some_and(|c| c.serves(protocol.name()))
}

fn short(scenario: &ScenarioDef, level: &Level, profile: &ProfileDef) -> String {
    format!("{}/{}/{}", scenario.name, level.label, profile.name)
}

fn short_of(c: &CellSpec) -> String {
    format!("{}/{}/{}", c.scenario, c.level, c.profile)
}

pub fn expand(m: &Matrix, opts: &Options) -> anyhow::Result<Plan> {
    let filter = Filter::new(&opts.only)?;
    let mut timing = m.timing;
    let quick = if opts.quick {
        let q = m
            .quick
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("--quick needs a [quick] section in the matrix file"))?;
        timing.warmup_ms = q.warmup_ms.unwrap_or(timing.warmup_ms);
        timing.duration_ms = q.duration_ms.unwrap_or(timing.duration_ms);
        timing.repetitions = q.repetitions.unwrap_or(timing.repetitions);
        timing.cooldown_ms = q.cooldown_ms.unwrap_or(timing.cooldown_ms);
        Some(q)
    } else {
        None
    };
    // `--quick` may lower the repetitions; the cap never goes below them.
    let adaptive = opts
        .target_ci_pct
        .or(m.target_ci_pct)
        .map(|target_ci_pct| Adaptive {
            target_ci_pct,
            max_repetitions: m.max_repetitions.max(timing.repetitions),
        });
    let shared = Shared {
        m,
        timing,
        adaptive,
    };

    let mut groups = Vec::new();
    let mut offered = Vec::new();
    let mut not_applicable = Vec::new();
    for (scenario, level, profile) in shared.cells() {
        if let Some(q) = quick
            && !q.cells.contains(&short(scenario, level, profile))
        {
            continue;
        }
        let mut all: Vec<CellSpec> = Vec::new();
        for s in &m.services {
            let c = shared.spec(s, scenario, level, profile, None);
            if serves(s, scenario.protocol) {
                all.push(c);
                continue;
            }
            if filter.names_both(&c) {
                anyhow::bail!(
                    "--only asks for {} in scenario {}: {} does not serve {} \
                     (services/services.toml lists what each service serves)",
                    c.service,
                    c.scenario,
                    c.service,
                    scenario.protocol.name()
                );
            }
            let na = NotApplicable {
                service: c.service.clone(),
                scenario: c.scenario.clone(),
                protocol: scenario.protocol,
            };
            if filter.keep(&c) && !not_applicable.contains(&na) {
                not_applicable.push(na);
            }
        }
        let kept: Vec<CellSpec> = all.iter().filter(|c| filter.keep(c)).cloned().collect();
        offered.extend(all);
        if !kept.is_empty() {
            groups.push(kept);
        }
    }
    if groups.is_empty() {
        anyhow::bail!(
            "the plan is empty: no cell matches the --only / --quick selection{}",
            filter.unmatched(&offered)
        );
    }
    let calibration = match (opts.calibration, &m.calibration) {
        (Calibrate::AsConfigured, None) => Vec::new(),
        (_, Some(def)) => calibration_groups(&shared, def),
        (Calibrate::Only, None) => calibration_groups(&shared, &default_calibration(m, &groups)),
    };
    // A quick run calibrates only where it runs.
    let calibration = match quick {
        Some(q) => calibration
            .into_iter()
            .filter(|pair| (pair.first()).is_some_and(|c| q.cells.contains(&short_of(c))))
            .collect(),
        None => calibration,
    };
    let calibration = match opts.calibration {
        Calibrate::AsConfigured => share_rounds(&mut groups, calibration),
        Calibrate::Only => calibration,
    };
    if opts.calibration == Calibrate::Only {
        if calibration.is_empty() {
            anyhow::bail!("nothing to calibrate: the plan has no closed- or open-loop cell");
        }
        groups.clear();
    }
    let reference = match &m.reference {
        Some(r) => {
            let p: Vec<&str> = r.split('/').collect();
            let key = cell_key(p[0], p[1], p[2], p[3]);
            // Only meaningful when the reference cell is part of this run (and measures
            // throughput: a churn cell has no req/s to drift).
            groups
                .iter()
                .flatten()
                .find(|c| c.key == key && c.churn.is_none())
                .cloned()
        }
        None => groups.iter().flatten().find(|c| c.churn.is_none()).cloned(),
    }
    // The drift re-run is one repetition, never adaptive.
    .map(|c| CellSpec {
        adaptive: None,
        ..c
    });
    Ok(Plan {
        groups,
        calibration,
        reference,
        drift_points: m.drift_points,
        baseline: m.baseline.clone(),
        syscalls_off: if !m.count_syscalls {
            Some("not counted (defaults.count_syscalls = false)")
        } else if quick.is_some_and(|q| q.count_syscalls == Some(false)) {
            Some("not counted (--quick: [quick] count_syscalls = false; a full run counts)")
        } else {
            None
        },
        count_instructions: opts.count_instructions,
        not_applicable,
    })
}

/// The two arms of every calibration cell, in the order the file names them.
fn calibration_groups(shared: &Shared, def: &CalibrationDef) -> Vec<Vec<CellSpec>> {
    let Some(service) = shared.m.services.iter().find(|s| s.name == def.service) else {
        return Vec::new();
    };
    def.cells
        .iter()
        .filter_map(|name| {
            let (scenario, level, profile) = shared
                .cells()
                .into_iter()
                .find(|&(s, l, p)| short(s, l, p) == *name)?;
            Some(
                ["a", "b"]
                    .iter()
                    .map(|arm| shared.spec(service, scenario, level, profile, Some(arm)))
                    .collect(),
            )
        })
        .collect()
}

/// A calibration cell whose service the run measures there anyway shares that cell's rounds:
/// the cell itself is arm A, and arm B alone runs, appended to its group (A … B, round after
/// round), so the A/A noise comes from the rounds the verdicts are paired on and costs one
/// arm's repetitions instead of two. The other pairs (the service not in the run there, or
/// adaptive repetitions, whose arms must stop together) still run first, both arms.
fn share_rounds(groups: &mut [Vec<CellSpec>], pairs: Vec<Vec<CellSpec>>) -> Vec<Vec<CellSpec>> {
    let same = |c: &CellSpec, b: &CellSpec| {
        c.arm.is_none()
            && (&c.service, &c.scenario, &c.level, &c.profile)
                == (&b.service, &b.scenario, &b.level, &b.profile)
    };
    pairs
        .into_iter()
        .filter_map(|pair| {
            let b = pair
                .iter()
                .find(|c| c.arm.as_deref() == Some("b") && c.adaptive.is_none());
            let home = b.and_then(|b| groups.iter_mut().find(|g| g.iter().any(|c| same(c, b))));
            match (home, b) {
                (Some(g), Some(b)) => {
                    g.push(b.clone());
                    None
                }
                _ => Some(pair),
            }
        })
        .collect()
}

/// Without `[calibration]`: the baseline at the plan's first closed-loop and first open-loop
/// cell.
fn default_calibration(m: &Matrix, groups: &[Vec<CellSpec>]) -> CalibrationDef {
    let first = |open: bool| {
        groups.iter().flatten().find(|c| {
            c.churn.is_none() && matches!(c.load, loadgen::LoadModel::Open { .. }) == open
        })
    };
    CalibrationDef {
        service: m.baseline.clone(),
        cells: [first(false), first(true)]
            .into_iter()
            .flatten()
            .map(|c| format!("{}/{}/{}", c.scenario, c.level, c.profile))
            .collect(),
    }
}

/// Human listing for `matrix plan`.
pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let label = |c: &CellSpec| match &c.arm {
        Some(a) => format!("{} ({a})", c.service),
        None => c.service.clone(),
    };
    // Variants (`service@variant`) are longer than any built-in name: the column grows.
    let w = plan
        .all_cells()
        .map(|c| label(c).chars().count())
        .fold(20, usize::max);
    let _ = writeln!(
        out,
        "{:<4} {:<w$} {:<18} {:<10} {:<10} {:>4} {:>14}",
        "#", "service", "scenario", "level", "profile", "reps", "window"
    );
    for (i, c) in plan.all_cells().enumerate() {
        let _ = writeln!(
            out,
            "{:<4} {:<w$} {:<18} {:<10} {:<10} {:>4} {:>14}",
            i + 1,
            label(c),
            c.scenario,
            c.level,
            c.profile,
            match c.adaptive {
                Some(a) => format!("{}-{}", c.repetitions, a.max_repetitions),
                None => c.repetitions.to_string(),
            },
            match &c.churn {
                Some(ch) => format!("~{} ms churn", crate::churn::estimate_ms(ch)),
                None => format!("{}+{} ms", c.warmup_ms, c.duration_ms),
            }
        );
    }
    if !plan.calibration.is_empty() {
        let _ = writeln!(
            out,
            "calibration: {} cell(s) × 2 identical arms (A B A B), run first",
            plan.calibration.len()
        );
    }
    let shared = plan.groups.iter().flatten().filter(|c| c.arm.is_some());
    if let n @ 1.. = shared.count() {
        let _ = writeln!(
            out,
            "calibration: {n} cell(s) where arm B runs in the group, round after round, against the service's own cell (arm A)"
        );
    }
    if let Some(r) = &plan.reference {
        let _ = writeln!(
            out,
            "drift reference (re-run after group(s) {:?} of {}): {}",
            plan.drift_after(),
            plan.groups.len(),
            r.key
        );
    }
    for na in &plan.not_applicable {
        let _ = writeln!(
            out,
            "n/a (not run): {} in {}: {}",
            na.service,
            na.scenario,
            na.words().trim_start_matches("n/a: ")
        );
    }
    if plan.count_instructions {
        let counted: u32 = plan
            .all_cells()
            .filter(|c| c.counts_instructions())
            .map(|c| c.repetitions)
            .sum();
        let _ = writeln!(
            out,
            "--count-instructions: Valgrind's two runs after {counted} repetition(s) at c1, ~{:.1} s each, in the estimate",
            crate::count::valgrind::ESTIMATE_MS as f64 / 1000.0
        );
    }
    let _ = writeln!(
        out,
        "{} cells, {} service starts, estimated wall time {} (m:ss, {} ms start/stop overhead per start assumed)",
        plan.cell_count(),
        plan.rep_count(),
        min_sec(plan.estimate_s()),
        START_OVERHEAD_MS
    );
    if let Some(a) = plan.all_cells().find_map(|c| c.adaptive) {
        let _ = writeln!(
            out,
            "adaptive repetitions: each cell until its 95 % CI half-width is ≤ {} % or {} repetitions; worst case {} service starts, {} (m:ss)",
            a.target_ci_pct,
            a.max_repetitions,
            plan.max_rep_count(),
            min_sec(plan.worst_case_s())
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::validate::parse;
    use std::path::Path;

    const M: &str = r#"
[defaults]
loadgen = "/bin/true"
warmup_ms = 100
duration_ms = 200
repetitions = 2
cooldown_ms = 0
reference = "b/json/c4/small"

[quick]
cells = ["ping/c1/pinned"]
repetitions = 1

[[services]]
name = "a"
binary = "/bin/true"

[[services]]
name = "b"
binary = "/bin/true"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [1, 4] }

[[scenarios]]
name = "json"
path = "/json"
load = { model = "closed", connections = [4], pipeline = 16 }
profiles = ["pinned"]

[[scenarios]]
name = "json2"
path = "/json"
load = { model = "closed", connections = [4] }

[[profiles]]
name = "pinned"
server_cpus = "0"
loadgen_cpus = "0"

[[profiles]]
name = "small"
server_cpus = "0"
loadgen_cpus = "0"
cpu_quota = 0.2
memory_max_mib = 400
"#;

    fn matrix() -> Matrix {
        // "json/c4/small" does not exist (json is pinned-only, pipelined): use json2's.
        parse(
            Path::new("m.toml"),
            &M.replace("b/json/c4/small", "b/json2/c4/small"),
            None,
        )
        .unwrap()
    }

    #[test]
    fn expands_full_product_grouped_by_service() {
        let p = expand(&matrix(), &Options::default()).unwrap();
        // pinned: ping c1,c4 + json c4p16 + json2 c4 = 4 groups; small: ping x2 + json2 = 3.
        assert_eq!(p.groups.len(), 7);
        assert_eq!(p.cell_count(), 14);
        assert!(p.groups.iter().all(|g| g.len() == 2));
        assert_eq!(p.groups[0][0].key, "a__ping__c1__pinned");
        assert_eq!(p.groups[0][1].key, "b__ping__c1__pinned");
        assert_eq!(p.groups[2][0].level, "c4p16");
        assert_eq!(p.reference.as_ref().unwrap().key, "b__json2__c4__small");
        let small = p.cells().find(|c| c.profile == "small").unwrap();
        assert_eq!(small.limits.memory_max_bytes, Some(400 * 1024 * 1024));
        // 14 cells × 2 reps × (100+200+0+syscall window+overhead) + the reference at 4
        // drift points; without the syscall count, the window is not in it.
        let rep = (300 + crate::count::exact::ESTIMATE_MS + START_OVERHEAD_MS) as f64 / 1000.0;
        assert!((p.estimate_s() - rep * 32.0).abs() < 1e-9);
        let uncounted = Plan {
            syscalls_off: Some("not counted"),
            ..p.clone()
        };
        let rep = (300 + START_OVERHEAD_MS) as f64 / 1000.0;
        assert!((uncounted.estimate_s() - rep * 32.0).abs() < 1e-9);
        assert_eq!(p.drift_after(), vec![2, 4, 6, 7]);
        assert!(p.calibration.is_empty());
        assert_eq!(p.estimate_s(), p.worst_case_s());
    }

    /// A scenario in h2c: a service whose services.toml entry does not list it (and one the
    /// suite did not write) is not run there, and is listed as n/a; `--only` naming such a
    /// pair is refused; the service that serves it is told `--protocol h2c` and loadgen to
    /// speak it, its streams in the level's name.
    #[test]
    fn a_protocol_a_service_does_not_serve_is_not_applicable() {
        let dir = std::env::temp_dir().join(format!("plan-h2c-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["ping-tokio-hyper", "ping-epoll"] {
            std::fs::copy("/bin/true", dir.join(name)).unwrap();
        }
        let text = format!(
            r#"
[defaults]
loadgen = "/bin/true"
duration_ms = 200

[[services]]
name = "ping-tokio-hyper"
binary = "{d}/ping-tokio-hyper"

[[services]]
name = "ping-epoll"
binary = "{d}/ping-epoll"

[[services]]
name = "other"
command = ["/bin/true", "{{port}}"]

[[scenarios]]
name = "ping"
path = "/ping"
load = {{ model = "closed", connections = [1] }}

[[scenarios]]
name = "ping-h2c"
path = "/ping"
protocol = "h2"
load = {{ model = "closed", connections = [64], streams = 10 }}

[[profiles]]
name = "pinned"
server_cpus = "0"
loadgen_cpus = "0"
"#,
            d = dir.display()
        );
        let m = parse(Path::new("m.toml"), &text, None).unwrap();
        let p = expand(&m, &Options::default()).unwrap();
        let h2: Vec<&CellSpec> = p.cells().filter(|c| c.scenario == "ping-h2c").collect();
        assert_eq!(h2.len(), 1, "only the service that serves h2c");
        let c = h2[0];
        assert_eq!(
            (c.service.as_str(), c.level.as_str()),
            ("ping-tokio-hyper", "c64s10")
        );
        assert_eq!(c.service_args, ["--protocol", "h2c"]);
        assert_eq!(c.load_spec(1).protocol, loadgen::Protocol::H2c);
        assert_eq!(c.load_spec(1).pipeline(), 10);
        assert_eq!(p.cells().filter(|c| c.scenario == "ping").count(), 3);
        let na: Vec<String> = p.not_applicable.iter().map(NotApplicable::words).collect();
        assert_eq!(
            na,
            [
                "n/a: ping-epoll does not serve h2c",
                "n/a: other does not serve h2c"
            ]
        );
        assert!(
            render(&p).contains("n/a (not run): ping-epoll in ping-h2c"),
            "{}",
            render(&p)
        );
        // Asked for by name: refused before anything runs.
        let only = |f: &[&str]| Options {
            only: f.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let e = expand(&m, &only(&["service=ping-epoll", "scenario=ping-h2c"])).unwrap_err();
        assert!(
            e.to_string().contains("ping-epoll does not serve h2c"),
            "{e}"
        );
        // Not asked for: the selection of one service lists nothing n/a for the others.
        let p = expand(&m, &only(&["service=ping-tokio-hyper"])).unwrap();
        assert!(p.not_applicable.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn drift_points_are_spread_and_never_repeated() {
        let mut p = expand(&matrix(), &Options::default()).unwrap();
        p.drift_points = 1;
        assert_eq!(p.drift_after(), vec![7]);
        p.drift_points = 20;
        assert_eq!(p.drift_after(), (1..=7).collect::<Vec<_>>());
        p.drift_points = 0;
        assert!(p.drift_after().is_empty());
    }

    #[test]
    fn calibration_arms_come_first_and_only_when_asked() {
        let text = format!(
            "{}\n[calibration]\nservice = \"b\"\ncells = [\"ping/c4/pinned\"]\n",
            M.replace("b/json/c4/small", "b/json2/c4/small")
        );
        let m = parse(Path::new("m.toml"), &text, None).unwrap();
        // b is measured at ping/c4/pinned: arm B joins that group, and b's own cell is arm A.
        let p = expand(&m, &Options::default()).unwrap();
        assert!(p.calibration.is_empty());
        let g = p
            .groups
            .iter()
            .find(|g| g.iter().any(|c| c.arm.is_some()))
            .unwrap();
        let keys: Vec<&str> = g.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys.last(),
            Some(&"calibration-b__b__ping__c4__pinned"),
            "{keys:?}"
        );
        assert!(keys.contains(&"b__ping__c4__pinned"));
        assert_eq!(p.cells().count(), 14, "arm B is not a matrix cell");
        assert_eq!(p.cell_count(), 15);
        assert!(render(&p).contains("1 cell(s) where arm B runs in the group"));
        // Where b's cell is not in the run, both arms run first.
        let without_b = Options {
            only: vec!["service=a".into()],
            ..Options::default()
        };
        let w = expand(&m, &without_b).unwrap();
        assert_eq!(w.calibration.len(), 1);
        let keys: Vec<&str> = w.calibration[0].iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "calibration-a__b__ping__c4__pinned",
                "calibration-b__b__ping__c4__pinned"
            ]
        );
        assert_eq!(w.all_cells().next().unwrap().arm.as_deref(), Some("a"));
        let only = Options {
            calibration: Calibrate::Only,
            ..Options::default()
        };
        let c = expand(&m, &only).unwrap();
        assert!(c.groups.is_empty() && c.reference.is_none());
        assert_eq!(c.cell_count(), 2);
        // Without [calibration]: the baseline (first service) at the first closed- and
        // open-loop cells; this matrix has no open loop.
        let d = expand(&matrix(), &only).unwrap();
        assert_eq!(d.calibration.len(), 1);
        assert_eq!(
            d.calibration[0][0].key,
            "calibration-a__a__ping__c1__pinned"
        );
    }

    #[test]
    fn adaptive_repetitions_plan_their_worst_case() {
        let opts = Options {
            target_ci_pct: Some(3.0),
            ..Options::default()
        };
        let p = expand(&matrix(), &opts).unwrap();
        let c = p.cells().next().unwrap();
        assert_eq!(c.repetitions, 2);
        assert_eq!(c.max_repetitions(), 10);
        assert_eq!(c.adaptive.unwrap().target_ci_pct, 3.0);
        // The drift re-run is one repetition, never adaptive.
        assert!(p.reference.as_ref().unwrap().adaptive.is_none());
        assert_eq!(p.max_rep_count(), 14 * 10 + 4);
        assert!(p.worst_case_s() > p.estimate_s());
        assert!(render(&p).contains("worst case 144 service starts"));
    }

    #[test]
    fn a_quick_run_counts_as_its_section_says_and_calibrates_only_where_it_runs() {
        let text = format!(
            "{}\n[calibration]\nservice = \"a\"\ncells = [\"ping/c1/pinned\", \"ping/c4/pinned\"]\n",
            M.replace("b/json/c4/small", "b/json2/c4/small").replace(
                "repetitions = 1\n",
                "repetitions = 1\ncount_syscalls = false\n"
            )
        );
        let m = parse(Path::new("m.toml"), &text, None).unwrap();
        let quick = Options {
            quick: true,
            ..Options::default()
        };
        let q = expand(&m, &quick).unwrap();
        assert!(q.syscalls_off.is_some_and(|w| w.contains("--quick")));
        let arms: Vec<String> = q
            .all_cells()
            .filter(|c| c.arm.is_some())
            .map(short_of)
            .collect();
        assert_eq!(
            arms,
            ["ping/c1/pinned"],
            "the c4 calibration is not in the quick run"
        );
        // The full run counts, and calibrates both cells.
        let full = expand(&m, &Options::default()).unwrap();
        assert_eq!(full.syscalls_off, None);
        assert_eq!(full.all_cells().filter(|c| c.arm.is_some()).count(), 2);
        assert!(full.estimate_s() > 0.0);
    }

    #[test]
    fn quick_and_only_filter() {
        let m = matrix();
        let q = expand(
            &m,
            &Options {
                quick: true,
                only: vec![],
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(q.cell_count(), 2);
        assert_eq!(q.cells().next().unwrap().repetitions, 1);
        let o = expand(
            &m,
            &Options {
                quick: false,
                only: vec!["service=a".into(), "profile=small".into()],
                ..Options::default()
            },
        )
        .unwrap();
        assert_eq!(o.cell_count(), 3);
        assert!(o.cells().all(|c| c.service == "a" && c.profile == "small"));
        // Reference cell filtered out → no drift re-run rather than a surprise cell.
        assert!(o.reference.is_none());
        let typo = expand(
            &m,
            &Options {
                quick: false,
                only: vec!["service=zzz".into()],
                ..Options::default()
            },
        )
        .unwrap_err()
        .to_string();
        // It names what the selection could have matched.
        assert!(
            typo.contains("service=zzz matches no service of this selection (there are: a, b)"),
            "{typo}"
        );
        assert!(
            expand(
                &m,
                &Options {
                    quick: false,
                    only: vec!["colour=red".into()],
                    ..Options::default()
                }
            )
            .is_err()
        );
    }

    #[test]
    fn counting_instructions_adds_valgrinds_time_to_each_c1_repetition() {
        let m = matrix();
        let without = expand(&m, &Options::default()).unwrap();
        let with = expand(
            &m,
            &Options {
                count_instructions: true,
                ..Options::default()
            },
        )
        .unwrap();
        let counted: u32 = with
            .all_cells()
            .filter(|c| c.counts_instructions())
            .map(|c| c.repetitions)
            .sum::<u32>()
            + with
                .reference
                .as_ref()
                .filter(|r| r.counts_instructions())
                .map_or(0, |_| with.drift_after().len() as u32);
        assert!(counted > 0);
        let added = with.estimate_s() - without.estimate_s();
        let each = crate::count::valgrind::ESTIMATE_MS as f64 / 1000.0;
        assert!((added - each * f64::from(counted)).abs() < 1e-9, "{added}");
        assert!(render(&with).contains("--count-instructions: Valgrind's two runs after"));
        assert!(!render(&without).contains("--count-instructions"));
    }

    #[test]
    fn render_lists_every_cell_and_estimate() {
        let p = expand(&matrix(), &Options::default()).unwrap();
        let s = render(&p);
        assert_eq!(s.lines().filter(|l| l.contains(" pinned ")).count(), 8);
        assert!(s.contains("14 cells"), "{s}");
        assert!(s.contains("estimated wall time"), "{s}");
    }
}
