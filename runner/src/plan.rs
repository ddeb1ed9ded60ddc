//! Expanding a validated matrix into cells, in execution order, with a time budget.
//!
//! Cells are grouped by (scenario, level, profile); inside a group every service runs
//! repetition 1, then every service runs repetition 2, … so slow drift of the machine hits
//! all services alike instead of whichever happened to run last.

use std::fmt::Write as _;

use crate::config::Matrix;
use crate::results::schema::CellSpec;
use crate::results::units::min_sec;

/// Estimated fixed cost of one service start: spawn, first 200, verification, stop, port check.
pub const START_OVERHEAD_MS: u64 = 400;

#[derive(Debug, Clone, Default)]
pub struct Options {
    pub quick: bool,
    /// `--only` filters: "service=a,b", "scenario=x", "profile=p", "level=c64", or a bare
    /// name matching any of them. Different dimensions AND, values within one OR.
    pub only: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// Groups in execution order; each holds one cell per service.
    pub groups: Vec<Vec<CellSpec>>,
    /// Re-run once at the end to measure drift.
    pub reference: Option<CellSpec>,
}

impl Plan {
    pub fn cells(&self) -> impl Iterator<Item = &CellSpec> {
        self.groups.iter().flatten()
    }

    pub fn cell_count(&self) -> usize {
        self.groups.iter().map(Vec::len).sum()
    }

    /// Total service starts (one per repetition per cell, plus the drift re-run).
    pub fn rep_count(&self) -> u64 {
        self.cells().map(|c| u64::from(c.repetitions)).sum::<u64>()
            + u64::from(self.reference.is_some())
    }

    /// Wall-time estimate in seconds.
    pub fn estimate_s(&self) -> f64 {
        let rep_ms = |c: &CellSpec| {
            let load_ms = match &c.churn {
                Some(ch) => crate::churn::estimate_ms(ch),
                None => c.warmup_ms + c.duration_ms,
            };
            load_ms + c.cooldown_ms + START_OVERHEAD_MS
        };
        let ms: u64 = self
            .cells()
            .map(|c| rep_ms(c) * u64::from(c.repetitions))
            .sum::<u64>()
            + self.reference.as_ref().map_or(0, rep_ms);
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

    let mut groups = Vec::new();
    for profile in &m.profiles {
        for scenario in &m.scenarios {
            if let Some(ps) = &scenario.profiles
                && !ps.contains(&profile.name)
            {
                continue;
            }
            for level in &scenario.levels {
                let short = format!("{}/{}/{}", scenario.name, level.label, profile.name);
                if let Some(q) = quick
                    && !q.cells.contains(&short)
                {
                    continue;
                }
                let group: Vec<CellSpec> = m
                    .services
                    .iter()
                    .map(|s| CellSpec {
                        key: cell_key(&s.name, &scenario.name, &level.label, &profile.name),
                        service: s.name.clone(),
                        scenario: scenario.name.clone(),
                        level: level.label.clone(),
                        profile: profile.name.clone(),
                        path: scenario.path.clone(),
                        load: level.model.clone(),
                        keepalive: scenario.keepalive,
                        loadgen_threads: m.loadgen_threads,
                        repetitions: timing.repetitions,
                        warmup_ms: timing.warmup_ms,
                        duration_ms: timing.duration_ms,
                        cooldown_ms: timing.cooldown_ms,
                        request_timeout_ms: m.request_timeout_ms,
                        expect_body_bytes: scenario.expect_body_bytes,
                        limits: profile.limits.clone(),
                        service_args: s.args.clone(),
                        churn: level.churn,
                        hosts: profile.placement.clone(),
                    })
                    .collect();
                let kept: Vec<CellSpec> = group.into_iter().filter(|c| filter.keep(c)).collect();
                if !kept.is_empty() {
                    groups.push(kept);
                }
            }
        }
    }
    if groups.is_empty() {
        anyhow::bail!("the plan is empty: no cell matches the --only / --quick selection");
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
    };
    Ok(Plan { groups, reference })
}

/// Human listing for `matrix plan`.
pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<4} {:<20} {:<18} {:<10} {:<10} {:>4} {:>14}",
        "#", "service", "scenario", "level", "profile", "reps", "window"
    );
    for (i, c) in plan.cells().enumerate() {
        let _ = writeln!(
            out,
            "{:<4} {:<20} {:<18} {:<10} {:<10} {:>4} {:>14}",
            i + 1,
            c.service,
            c.scenario,
            c.level,
            c.profile,
            c.repetitions,
            match &c.churn {
                Some(ch) => format!("~{} ms churn", crate::churn::estimate_ms(ch)),
                None => format!("{}+{} ms", c.warmup_ms, c.duration_ms),
            }
        );
    }
    if let Some(r) = &plan.reference {
        let _ = writeln!(out, "drift reference (re-run once at the end): {}", r.key);
    }
    let _ = writeln!(
        out,
        "{} cells, {} service starts, estimated wall time {} (m:ss, {} ms start/stop overhead per start assumed)",
        plan.cell_count(),
        plan.rep_count(),
        min_sec(plan.estimate_s()),
        START_OVERHEAD_MS
    );
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
        // 14 cells × 2 reps × (100+200+0+overhead) + reference once.
        let rep = (300 + START_OVERHEAD_MS) as f64 / 1000.0;
        assert!((p.estimate_s() - rep * 29.0).abs() < 1e-9);
    }

    #[test]
    fn quick_and_only_filter() {
        let m = matrix();
        let q = expand(
            &m,
            &Options {
                quick: true,
                only: vec![],
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
            },
        )
        .unwrap();
        assert_eq!(o.cell_count(), 3);
        assert!(o.cells().all(|c| c.service == "a" && c.profile == "small"));
        // Reference cell filtered out → no drift re-run rather than a surprise cell.
        assert!(o.reference.is_none());
        assert!(
            expand(
                &m,
                &Options {
                    quick: false,
                    only: vec!["service=zzz".into()]
                }
            )
            .is_err()
        );
        assert!(
            expand(
                &m,
                &Options {
                    quick: false,
                    only: vec!["colour=red".into()]
                }
            )
            .is_err()
        );
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
