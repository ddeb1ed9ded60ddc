//! `matrix ingest`: loadgen reports saved from the generator Jobs' logs
//! (`<reports>/<cell key>.<n>.json`, or `<cell key>.json` for one) → a result set like
//! `matrix run` writes, for the cells `matrix k8s render` planned (its plan.json). Server CPU
//! and memory were not sampled in the cluster: those fields stay "not measured".

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::results::schema::{CellResult, CellSpec, CellStatus, RepResult, ServerUsage};
use crate::results::summary::summarize_cell;

/// One report filed under a planned cell as repetition `rep`.
pub struct Filed {
    pub rep: u32,
    pub path: PathBuf,
    pub report: loadgen::Report,
}

/// Every report of a directory filed under its planned cell (in repetition order), and the
/// `.json` files whose names match no planned cell.
pub struct Filing {
    pub cells: BTreeMap<String, Vec<Filed>>,
    pub unknown: Vec<PathBuf>,
}

/// The planned cell a file name belongs to and the repetition it names: `<key>.json` is
/// repetition 1, `<key>.<n>.json` repetition n (digits only). The longest matching key wins.
fn cell_of<'p>(name: &str, planned: &'p [CellSpec]) -> Option<(&'p CellSpec, &'p str, String)> {
    let stem = name.strip_suffix(".json")?;
    planned
        .iter()
        .filter_map(|c| {
            let rest = stem.strip_prefix(c.key.as_str())?;
            match rest {
                "" => Some((c, c.key.as_str(), String::new())),
                r => {
                    let n = r.strip_prefix('.')?;
                    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                        .then(|| (c, c.key.as_str(), n.to_string()))
                }
            }
        })
        .max_by_key(|(_, k, _)| k.len())
}

/// Where two JSON values differ first: ("model.connections", planned, reported).
fn first_difference(path: &str, want: &Value, got: &Value) -> Option<(String, String, String)> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let mut keys: Vec<&String> = w.keys().chain(g.keys()).collect();
            // A tagged enum's tag first: "open" vs "closed" says more than their fields.
            keys.sort_by_key(|k| (k.as_str() != "kind", *k));
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                first_difference(
                    &sub,
                    w.get(k).unwrap_or(&Value::Null),
                    g.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        _ if want == got => None,
        _ => Some((path.to_string(), want.to_string(), got.to_string())),
    }
}

/// Why a report's spec is not the spec its cell's generator Job runs ([`super::job_spec`]):
/// the first field that differs, with both values.
pub fn spec_mismatch(cell: &CellSpec, reported: &loadgen::LoadSpec) -> Option<String> {
    let want = serde_json::to_value(super::job_spec(cell)).ok()?;
    let got = serde_json::to_value(reported).ok()?;
    first_difference("", &want, &got).map(|(field, w, g)| {
        format!(
            "{field} is {g} in the report but {w} in the plan's cell {}",
            cell.key
        )
    })
}

/// Files every report in `dir` under its planned cell. Refused (the error names the file):
/// a repetition number given twice (`K.json`, `K.1.json`, `K.01.json`), repetition 0 or one
/// beyond the plan's count, a file byte-identical to another (one measurement filed twice),
/// a report whose spec is not its cell's, a file that is not a loadgen report.
pub fn file_reports(dir: &Path, planned: &[CellSpec]) -> anyhow::Result<Filing> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    let mut cells: BTreeMap<String, Vec<Filed>> = BTreeMap::new();
    let mut unknown = Vec::new();
    let mut seen: BTreeMap<Vec<u8>, PathBuf> = BTreeMap::new();
    for p in entries {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".json") || !p.is_file() {
            continue;
        }
        let Some((cell, key, digits)) = cell_of(name, planned) else {
            unknown.push(p);
            continue;
        };
        let rep: u32 = if digits.is_empty() {
            1
        } else {
            digits
                .parse()
                .with_context(|| format!("{}: repetition {digits} is out of range", p.display()))?
        };
        if rep == 0 || rep > cell.repetitions {
            bail!(
                "{}: repetition {rep}, but the plan has {} repetition(s) of {key} (numbered from 1)",
                p.display(),
                cell.repetitions
            );
        }
        let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
        let digest = Sha256::digest(&bytes).to_vec();
        if let Some(first) = seen.get(&digest) {
            bail!(
                "{} is byte-identical to {}: one measurement filed twice",
                p.display(),
                first.display()
            );
        }
        seen.insert(digest, p.clone());
        let report: loadgen::Report = serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{}: not a loadgen report: {e}", p.display()))?;
        if let Some(why) = spec_mismatch(cell, &report.spec) {
            bail!("{}: not a report of this cell: {why}", p.display());
        }
        if let Some(why) = crate::results::measured::report_problem(None, &report, None) {
            bail!("{}: measured nothing: {why}", p.display());
        }
        let filed = cells.entry(key.to_string()).or_default();
        if let Some(other) = filed.iter().find(|f| f.rep == rep) {
            bail!(
                "{} and {} are both repetition {rep} of {key}",
                other.path.display(),
                p.display()
            );
        }
        filed.push(Filed {
            rep,
            path: p,
            report,
        });
    }
    for filed in cells.values_mut() {
        filed.sort_by_key(|f| f.rep);
    }
    Ok(Filing { cells, unknown })
}

/// One cell's result from its reports, each with its repetition number (None when there are
/// none).
pub fn cell_result(
    run_id: &str,
    spec: &CellSpec,
    reports: Vec<(u32, loadgen::Report)>,
) -> Option<CellResult> {
    if reports.is_empty() {
        return None;
    }
    let mut spec = spec.clone();
    spec.repetitions = reports.len() as u32;
    let mut c = CellResult::new(run_id, &spec);
    c.reps = reports
        .into_iter()
        .map(|(rep, report)| RepResult {
            rep,
            started_unix_ms: report.started_unix_ms,
            session: None,
            report,
            server: ServerUsage::default(),
            cgroup: None,
            loadgen_exit_code: None,
            floor_check: None,
            generators: vec![],
            counts: None,
            instructions: None,
        })
        .collect();
    c.status = CellStatus::Ok;
    c.summary = summarize_cell(&c);
    Some(c)
}
