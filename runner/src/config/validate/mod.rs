//! From matrix.toml text to a validated `Matrix`: parse errors and meaning errors (unknown
//! keys, missing binaries, impossible cpusets, dangling names) all come out as
//! `file:line:col: field: message`, every problem at once, before anything runs.
//!
//! This module owns the error type, the span → line:col mapping and the order of the checks
//! (`check`); each section of the file has its own module:
//! - `defaults`: `[defaults]` and the `[quick]` windows (timing, timeouts, loadgen);
//! - `services`: `[[services]]` (names, binaries), `external`: their `command`, and
//!   `variants`: their `[[services.variants]]`;
//! - `profiles`: `[[profiles]]` (cpusets, quota, memory, workers);
//! - `scenarios`: `[[scenarios]]` (request path, profile restrictions), and `load`: its
//!   load levels;
//! - `cells`: the cells named by `quick.cells`, `defaults.reference` and `[calibration]`,
//!   and the services named by `defaults.baseline` and `calibration.service`;
//! - `hosts`: `[[hosts]]` (SSH destinations) and where profiles place server and generators;
//! - `names` and `binaries`: rules shared by several sections;
//! - `bounds`: the fixed limits (windows, threads, rates) and why; `host`: what this machine
//!   allows (CPUs, open files, local ports).

mod binaries;
mod bounds;
mod burn;
mod cells;
mod churn;
mod connections;
mod defaults;
mod external;
pub mod headers;
mod host;
pub mod hosts;
mod load;
mod names;
mod profiles;
mod scenarios;
mod services;
mod variants;

use std::fmt;
use std::ops::Range;
use std::path::Path;

use super::Matrix;
use super::schema::MatrixFile;
pub use bounds::check_target_ci;

use binaries::Binaries;
use host::Host;

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

/// 1-based line and column of a byte offset (a span's start).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, col)
}

/// The problems found so far, located in `text`.
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
    parse_on(&Host::current(), path, text, exe_dir)
}

/// `parse` against the limits of `host`.
fn parse_on(
    host: &Host,
    path: &Path,
    text: &str,
    exe_dir: Option<&Path>,
) -> Result<Matrix, ConfigErrors> {
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
    let binaries = Binaries {
        base: path.parent().unwrap_or(Path::new(".")),
        exe_dir,
    };
    let m = check(&mut errs, file, &binaries, host, path, text);
    if errs.list.is_empty() {
        Ok(m)
    } else {
        Err(ConfigErrors(errs.list))
    }
}

/// Every section in turn; later sections see the validated names of earlier ones.
fn check(
    errs: &mut Errs,
    f: MatrixFile,
    binaries: &Binaries,
    host: &Host,
    path: &Path,
    text: &str,
) -> Matrix {
    let d = defaults::check(errs, &f.defaults, binaries);
    let services = services::check(errs, &f.services, binaries);
    let hosts = hosts::check(errs, &f.hosts, binaries.base);
    let profiles = profiles::check(errs, &f.profiles, &host.allowed_cpus, &hosts);
    let scenarios = scenarios::check(errs, &f.scenarios, &profiles, host, d.loadgen_threads);
    hosts::check_split(errs, &f.scenarios, &scenarios, &profiles);
    hosts::check_external(errs, &f.services, &scenarios, &profiles);
    let cells = cells::Cells {
        services: &services,
        scenarios: &scenarios,
        profiles: &profiles,
    };
    let quick = f.quick.as_ref().map(|q| {
        cells.check_quick(errs, &q.cells);
        defaults::quick(errs, q)
    });
    if let Some(r) = &f.defaults.reference {
        cells.check_reference(errs, r);
    }
    let baseline = cells.check_baseline(errs, f.defaults.baseline.as_ref());
    let calibration = f
        .calibration
        .as_ref()
        .map(|c| cells.check_calibration(errs, c, &baseline));
    Matrix {
        path: path.to_path_buf(),
        text: text.to_string(),
        timing: d.timing,
        startup_timeout_ms: d.startup_timeout_ms,
        stop_grace_ms: d.stop_grace_ms,
        request_timeout_ms: d.request_timeout_ms,
        loadgen_threads: d.loadgen_threads,
        loadgen: d.loadgen,
        reference: f.defaults.reference.as_ref().map(|r| r.get_ref().clone()),
        drift_points: d.drift_points,
        baseline,
        target_ci_pct: d.target_ci_pct,
        max_repetitions: d.max_repetitions,
        count_syscalls: d.count_syscalls,
        calibration,
        quick,
        services,
        scenarios,
        profiles,
        hosts,
    }
}

#[cfg(test)]
mod tests;
