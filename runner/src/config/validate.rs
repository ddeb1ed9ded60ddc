//! From matrix.toml text to a validated `Matrix`: parse errors and meaning errors (unknown
//! keys, missing binaries, impossible cpusets, dangling names) all come out as
//! `file:line:col: field: message`, every problem at once, before anything runs.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use loadgen::LoadModel;
use toml::Spanned;

use super::cpus::{allowed_cpus, format_cpus, parse_cpus};
use super::schema::{Load, MatrixFile, ModelKind};
use super::{Level, Matrix, ProfileDef, QuickDef, ScenarioDef, ServiceDef, Timing};
use crate::binaries::resolve_binary;
use crate::results::schema::ProfileLimits;

/// One problem in the matrix file, located.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.file, self.line, self.col, self.field, self.message
        )
    }
}

/// All problems found, one per line.
#[derive(Debug, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid matrix file ({} problem(s)):", self.0.len())?;
        for e in &self.0 {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, col)
}

struct Errs<'a> {
    file: String,
    text: &'a str,
    list: Vec<ConfigError>,
}

impl Errs<'_> {
    fn at(&mut self, span: Range<usize>, field: impl Into<String>, message: impl Into<String>) {
        let (line, col) = line_col(self.text, span.start);
        self.list.push(ConfigError {
            file: self.file.clone(),
            line,
            col,
            field: field.into(),
            message: message.into(),
        });
    }
}

/// Reads and validates a matrix file. `exe_dir` is where sibling binaries are looked up.
pub fn load(path: &Path, exe_dir: Option<&Path>) -> Result<Matrix, anyhow::Error> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read matrix file {}: {e}", path.display()))?;
    Ok(parse(path, &text, exe_dir)?)
}

/// Parses and validates matrix text (`path` is used for messages and relative binaries).
pub fn parse(path: &Path, text: &str, exe_dir: Option<&Path>) -> Result<Matrix, ConfigErrors> {
    let mut errs = Errs {
        file: path.display().to_string(),
        text,
        list: Vec::new(),
    };
    let file: MatrixFile = match toml::from_str(text) {
        Ok(f) => f,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            errs.at(span, "(syntax)", e.message().trim().to_string());
            return Err(ConfigErrors(errs.list));
        }
    };
    let base_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let m = check(&mut errs, file, &base_dir, exe_dir, path, text);
    if errs.list.is_empty() {
        Ok(m)
    } else {
        Err(ConfigErrors(errs.list))
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

fn check_name(errs: &mut Errs, name: &Spanned<String>, field: String, seen: &mut BTreeSet<String>) {
    if !valid_name(name.get_ref()) {
        errs.at(
            name.span(),
            field,
            format!(
                "{:?} is not a valid name (use letters, digits, '-', '_', '.')",
                name.get_ref()
            ),
        );
    } else if !seen.insert(name.get_ref().clone()) {
        errs.at(
            name.span(),
            field,
            format!("duplicate name {:?}", name.get_ref()),
        );
    }
}

fn binary(
    errs: &mut Errs,
    name: &Spanned<String>,
    field: String,
    base: &Path,
    exe_dir: Option<&Path>,
) -> PathBuf {
    match resolve_binary(name.get_ref(), base, exe_dir) {
        Ok(p) => p,
        Err(e) => {
            errs.at(name.span(), field, e);
            PathBuf::from(name.get_ref())
        }
    }
}

fn rate_label(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("r{}", rate as u64)
    } else {
        format!("r{rate}")
    }
}

/// One level per connection count (closed) or rate (open); misplaced fields are errors.
fn levels(errs: &mut Errs, i: usize, load: &Load) -> Vec<Level> {
    let field = |f: &str| format!("scenarios[{i}].load.{f}");
    let model_span = load.model.span();
    match load.model.get_ref() {
        ModelKind::Closed => {
            if let Some(r) = &load.rates_per_s {
                errs.at(r.span(), field("rates_per_s"), "only for model = \"open\"");
            }
            if let Some(r) = &load.max_connections {
                errs.at(
                    r.span(),
                    field("max_connections"),
                    "only for model = \"open\"",
                );
            }
            let pipeline = load.pipeline.as_ref().map_or(1, |p| *p.get_ref());
            if pipeline == 0 {
                let span = load
                    .pipeline
                    .as_ref()
                    .map_or(model_span.clone(), |p| p.span());
                errs.at(span, field("pipeline"), "must be >= 1");
            }
            let Some(conns) = &load.connections else {
                errs.at(
                    model_span,
                    field("connections"),
                    "closed model needs connections = [..]",
                );
                return Vec::new();
            };
            if conns.get_ref().is_empty() || conns.get_ref().contains(&0) {
                errs.at(
                    conns.span(),
                    field("connections"),
                    "needs at least one level, each >= 1",
                );
            }
            conns
                .get_ref()
                .iter()
                .map(|&c| Level {
                    label: if pipeline > 1 {
                        format!("c{c}p{pipeline}")
                    } else {
                        format!("c{c}")
                    },
                    model: LoadModel::Closed {
                        connections: c,
                        pipeline,
                    },
                })
                .collect()
        }
        ModelKind::Open => {
            if let Some(r) = &load.connections {
                errs.at(
                    r.span(),
                    field("connections"),
                    "open model uses max_connections",
                );
            }
            if let Some(r) = &load.pipeline {
                errs.at(r.span(), field("pipeline"), "only for model = \"closed\"");
            }
            let max_conns = load.max_connections.as_ref().map_or(0, |c| *c.get_ref());
            if max_conns == 0 {
                let span = load
                    .max_connections
                    .as_ref()
                    .map_or(model_span.clone(), |c| c.span());
                errs.at(
                    span,
                    field("max_connections"),
                    "open model needs max_connections >= 1",
                );
            }
            let Some(rates) = &load.rates_per_s else {
                errs.at(
                    model_span,
                    field("rates_per_s"),
                    "open model needs rates_per_s = [..]",
                );
                return Vec::new();
            };
            if rates.get_ref().is_empty()
                || rates.get_ref().iter().any(|r| !(*r > 0.0 && r.is_finite()))
            {
                errs.at(
                    rates.span(),
                    field("rates_per_s"),
                    "needs at least one rate, each > 0",
                );
            }
            rates
                .get_ref()
                .iter()
                .map(|&r| Level {
                    label: rate_label(r),
                    model: LoadModel::Open {
                        rate_per_s: r,
                        connections: max_conns,
                    },
                })
                .collect()
        }
    }
}

fn check(
    errs: &mut Errs,
    f: MatrixFile,
    base: &Path,
    exe_dir: Option<&Path>,
    path: &Path,
    text: &str,
) -> Matrix {
    let d = &f.defaults;
    let whole = 0..0;
    if *d.repetitions.get_ref() == 0 {
        errs.at(
            d.repetitions.span(),
            "defaults.repetitions",
            "must be at least 1",
        );
    }
    if *d.duration_ms.get_ref() == 0 {
        errs.at(d.duration_ms.span(), "defaults.duration_ms", "must be > 0");
    }
    if *d.loadgen_threads.get_ref() == 0 {
        errs.at(
            d.loadgen_threads.span(),
            "defaults.loadgen_threads",
            "must be at least 1",
        );
    }
    let loadgen = binary(errs, &d.loadgen, "defaults.loadgen".into(), base, exe_dir);
    let allowed = allowed_cpus();

    // services
    if f.services.is_empty() {
        errs.at(whole.clone(), "services", "no [[services]] defined");
    }
    let mut seen = BTreeSet::new();
    let mut services = Vec::new();
    for (i, s) in f.services.iter().enumerate() {
        check_name(errs, &s.name, format!("services[{i}].name"), &mut seen);
        let bin = binary(
            errs,
            &s.binary,
            format!("services[{i}].binary"),
            base,
            exe_dir,
        );
        services.push(ServiceDef {
            name: s.name.get_ref().clone(),
            binary: bin,
            args: s.args.clone(),
        });
    }

    // profiles
    if f.profiles.is_empty() {
        errs.at(whole.clone(), "profiles", "no [[profiles]] defined");
    }
    let mut seen = BTreeSet::new();
    let mut profiles = Vec::new();
    for (i, p) in f.profiles.iter().enumerate() {
        check_name(errs, &p.name, format!("profiles[{i}].name"), &mut seen);
        let mut cpus = |s: &Spanned<String>, field: &str| -> Vec<u32> {
            let field = format!("profiles[{i}].{field}");
            match parse_cpus(s.get_ref()) {
                Err(e) => {
                    errs.at(s.span(), field, e);
                    Vec::new()
                }
                Ok(v) => {
                    let missing: Vec<u32> =
                        v.iter().copied().filter(|c| !allowed.contains(c)).collect();
                    if !missing.is_empty() {
                        errs.at(
                            s.span(),
                            field,
                            format!(
                                "CPU(s) {} not available here (usable CPUs: {})",
                                format_cpus(&missing),
                                format_cpus(&allowed)
                            ),
                        );
                    }
                    v
                }
            }
        };
        let server_cpus = cpus(&p.server_cpus, "server_cpus");
        let loadgen_cpus = cpus(&p.loadgen_cpus, "loadgen_cpus");
        if let Some(q) = &p.cpu_quota
            && !(*q.get_ref() > 0.0 && q.get_ref().is_finite())
        {
            errs.at(
                q.span(),
                format!("profiles[{i}].cpu_quota"),
                "must be > 0 (CPUs)",
            );
        }
        if let Some(q) = &p.cpu_quota
            && !server_cpus.is_empty()
            && *q.get_ref() > server_cpus.len() as f64
        {
            errs.at(
                q.span(),
                format!("profiles[{i}].cpu_quota"),
                format!(
                    "quota of {} CPUs exceeds the {} server CPU(s) it can run on",
                    q.get_ref(),
                    server_cpus.len()
                ),
            );
        }
        if let Some(m) = &p.memory_max_mib
            && *m.get_ref() < 8
        {
            errs.at(
                m.span(),
                format!("profiles[{i}].memory_max_mib"),
                "must be at least 8 MiB",
            );
        }
        if let Some(w) = &p.workers
            && *w.get_ref() == 0
        {
            errs.at(w.span(), format!("profiles[{i}].workers"), "must be >= 1");
        }
        let workers = p
            .workers
            .as_ref()
            .map_or(server_cpus.len().max(1) as u32, |w| *w.get_ref());
        profiles.push(ProfileDef {
            name: p.name.get_ref().clone(),
            limits: ProfileLimits {
                server_cpus,
                loadgen_cpus,
                cpu_quota: p.cpu_quota.as_ref().map(|q| *q.get_ref()),
                memory_max_bytes: p.memory_max_mib.as_ref().map(|m| m.get_ref() * 1024 * 1024),
                workers,
            },
        });
    }
    let profile_names: BTreeSet<String> = profiles.iter().map(|p| p.name.clone()).collect();

    // scenarios
    if f.scenarios.is_empty() {
        errs.at(whole.clone(), "scenarios", "no [[scenarios]] defined");
    }
    let mut seen = BTreeSet::new();
    let mut scenarios = Vec::new();
    for (i, s) in f.scenarios.iter().enumerate() {
        check_name(errs, &s.name, format!("scenarios[{i}].name"), &mut seen);
        if !s.path.get_ref().starts_with('/') {
            errs.at(
                s.path.span(),
                format!("scenarios[{i}].path"),
                "must start with '/'",
            );
        }
        let levels = levels(errs, i, &s.load);
        if let Some(ps) = &s.profiles {
            for p in ps.get_ref() {
                if !profile_names.contains(p) {
                    errs.at(
                        ps.span(),
                        format!("scenarios[{i}].profiles"),
                        format!("unknown profile {p:?}"),
                    );
                }
            }
        }
        scenarios.push(ScenarioDef {
            name: s.name.get_ref().clone(),
            path: s.path.get_ref().clone(),
            keepalive: s.keepalive,
            expect_body_bytes: s.expect_body_bytes,
            levels,
            profiles: s.profiles.as_ref().map(|p| p.get_ref().clone()),
        });
    }

    // quick subset and reference cell: "scenario/level/profile" must name a real cell
    let cell_exists = |scenario: &str, level: &str, profile: &str| {
        scenarios.iter().any(|s| {
            s.name == scenario
                && s.levels.iter().any(|l| l.label == level)
                && profile_names.contains(profile)
                && s.profiles
                    .as_ref()
                    .is_none_or(|ps| ps.iter().any(|p| p == profile))
        })
    };
    let quick = f.quick.as_ref().map(|q| {
        for c in q.cells.get_ref() {
            let parts: Vec<&str> = c.split('/').collect();
            if parts.len() != 3 || !cell_exists(parts[0], parts[1], parts[2]) {
                errs.at(
                    q.cells.span(),
                    "quick.cells",
                    format!("{c:?} is not an existing \"scenario/level/profile\" cell"),
                );
            }
        }
        QuickDef {
            cells: q.cells.get_ref().clone(),
            warmup_ms: q.warmup_ms.as_ref().map(|v| *v.get_ref()),
            duration_ms: q.duration_ms.as_ref().map(|v| *v.get_ref()),
            repetitions: q.repetitions.as_ref().map(|v| *v.get_ref()),
            cooldown_ms: q.cooldown_ms.as_ref().map(|v| *v.get_ref()),
        }
    });
    if let Some(r) = &d.reference {
        let parts: Vec<&str> = r.get_ref().split('/').collect();
        let ok = parts.len() == 4
            && services.iter().any(|s| s.name == parts[0])
            && cell_exists(parts[1], parts[2], parts[3]);
        if !ok {
            errs.at(
                r.span(),
                "defaults.reference",
                format!(
                    "{:?} is not an existing \"service/scenario/level/profile\" cell",
                    r.get_ref()
                ),
            );
        }
    }

    Matrix {
        path: path.to_path_buf(),
        text: text.to_string(),
        timing: Timing {
            warmup_ms: *d.warmup_ms.get_ref(),
            duration_ms: *d.duration_ms.get_ref(),
            repetitions: *d.repetitions.get_ref(),
            cooldown_ms: *d.cooldown_ms.get_ref(),
        },
        startup_timeout_ms: *d.startup_timeout_ms.get_ref(),
        stop_grace_ms: *d.stop_grace_ms.get_ref(),
        request_timeout_ms: *d.request_timeout_ms.get_ref(),
        loadgen_threads: *d.loadgen_threads.get_ref(),
        loadgen,
        reference: d.reference.as_ref().map(|r| r.get_ref().clone()),
        quick,
        services,
        scenarios,
        profiles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[defaults]
loadgen = "/bin/true"
duration_ms = 200

[[services]]
name = "svc"
binary = "/bin/true"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [1, 16] }

[[scenarios]]
name = "open"
path = "/ping"
load = { model = "open", rates_per_s = [500.0], max_connections = 4 }

[[profiles]]
name = "pinned"
server_cpus = "0"
loadgen_cpus = "0"
"#;

    fn parse_str(text: &str) -> Result<Matrix, ConfigErrors> {
        parse(Path::new("m.toml"), text, None)
    }

    #[test]
    fn line_col_counts_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn good_file_parses_with_levels() {
        let m = parse_str(GOOD).unwrap();
        assert_eq!(m.scenarios[0].levels.len(), 2);
        assert_eq!(m.scenarios[0].levels[1].label, "c16");
        assert_eq!(m.scenarios[1].levels[0].label, "r500");
        assert_eq!(m.profiles[0].limits.workers, 1);
        assert_eq!(m.timing.duration_ms, 200);
    }

    #[test]
    fn unknown_key_names_file_line_and_field() {
        let text = GOOD.replace("duration_ms = 200", "duration_ms = 200\ndurration_ms = 5");
        let e = parse_str(&text).unwrap_err();
        let s = e.0[0].to_string();
        assert!(s.starts_with("m.toml:5:"), "{s}");
        assert!(s.contains("durration_ms"), "{s}");
    }

    #[test]
    fn missing_binary_names_line_and_field() {
        let text = GOOD.replace(
            "binary = \"/bin/true\"",
            "binary = \"/nonexistent/ping-nope\"",
        );
        let e = parse_str(&text).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e}");
        assert_eq!(e.0[0].line, 8);
        assert_eq!(e.0[0].field, "services[0].binary");
        assert!(e.0[0].message.contains("not found"), "{e}");
    }

    #[test]
    fn impossible_cpuset_is_rejected() {
        let text = GOOD.replace("server_cpus = \"0\"", "server_cpus = \"4095\"");
        let e = parse_str(&text).unwrap_err();
        assert_eq!(e.0[0].field, "profiles[0].server_cpus");
        assert_eq!(e.0[0].line, 22);
        assert!(e.0[0].message.contains("not available"), "{e}");
        let text = GOOD.replace("server_cpus = \"0\"", "server_cpus = \"1-0\"");
        let e = parse_str(&text).unwrap_err();
        assert_eq!(e.0[0].field, "profiles[0].server_cpus");
    }

    #[test]
    fn dangling_reference_and_bad_levels_all_reported() {
        let text = GOOD
            .replace(
                "duration_ms = 200",
                "duration_ms = 200\nreference = \"svc/ping/c99/pinned\"",
            )
            .replace("connections = [1, 16]", "connections = []");
        let e = parse_str(&text).unwrap_err();
        let fields: Vec<&str> = e.0.iter().map(|e| e.field.as_str()).collect();
        assert!(fields.contains(&"defaults.reference"), "{e}");
        assert!(fields.contains(&"scenarios[0].load.connections"), "{e}");
    }

    #[test]
    fn defaults_errors_point_at_defaults_when_quick_comes_first() {
        let text = GOOD
            .replace(
                "[defaults]\n",
                "[quick]\ncells = [\"ping/c1/pinned\"]\nrepetitions = 2\nduration_ms = 100\n\n[defaults]\nrepetitions = 0\n",
            )
            .replace("duration_ms = 200", "duration_ms = 0");
        let e = parse_str(&text).unwrap_err();
        let at: Vec<(&str, usize, usize)> =
            e.0.iter()
                .map(|e| (e.field.as_str(), e.line, e.col))
                .collect();
        assert_eq!(
            at,
            [
                ("defaults.repetitions", 8, 15),
                ("defaults.duration_ms", 10, 15)
            ],
            "{e}"
        );
    }

    #[test]
    fn syntax_error_located() {
        let e = parse_str("[defaults]\nwarmup_ms = = 3\n").unwrap_err();
        assert_eq!(e.0[0].line, 2);
        assert_eq!(e.0[0].field, "(syntax)");
    }

    #[test]
    fn wrong_type_located() {
        let text = GOOD.replace("duration_ms = 200", "duration_ms = \"long\"");
        let e = parse_str(&text).unwrap_err();
        assert_eq!(e.0[0].line, 4, "{e}");
    }
}
