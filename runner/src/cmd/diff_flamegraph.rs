//! `matrix report --diff-flamegraph OLD NEW`: for every cell both runs profiled
//! (`matrix run --flamegraph`), a differential flame graph at
//! `NEW/flamegraphs/<cell key>.diff.svg` — NEW's stacks, coloured by the change from OLD
//! (red: a larger share of the samples than in OLD, blue: smaller; shares, so the runs'
//! window lengths do not matter). A cell whose two recordings used different perf events is
//! refused: their weights are not the same unit.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::flamegraph::DIR;
use crate::profile::Profile;
use crate::profile::{ProfileRecord, diff_flamegraph_svg, weight_unit};
use crate::results::schema::CellResult;
use crate::results::set::{self, ResultSet};
use crate::results::store::write_atomic;

/// The recorded profile of a cell, if it has one with samples.
fn recorded(c: &CellResult) -> Option<&ProfileRecord> {
    match c.flamegraph.as_ref()?.profile.as_ref()? {
        Profile::Recorded(r) if r.svg.is_some() => Some(r),
        _ => None,
    }
}

fn folded(set: &ResultSet, r: &ProfileRecord) -> anyhow::Result<Vec<u8>> {
    let p = if r.folded.is_absolute() {
        r.folded.clone()
    } else {
        set.dir.join(&r.folded)
    };
    let bytes = std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?;
    // A file of garbage lines must not become a diff drawn from whatever parsed.
    crate::profile::sample_count(&bytes).with_context(|| format!("{}", p.display()))?;
    Ok(bytes)
}

/// Writes one diff per common profiled cell; returns (written files, refusals).
pub fn write(old: &ResultSet, new: &ResultSet) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
    let mut written = Vec::new();
    let mut refused = Vec::new();
    for (key, nc) in &new.cells {
        let (Some(n), Some(o)) = (recorded(nc), old.cells.get(key).and_then(recorded)) else {
            continue;
        };
        if n.event != o.event {
            refused.push(format!(
                "{key}: perf events differ ({} in {}, {} in {}); not comparable",
                o.event, old.label, n.event, new.label
            ));
            continue;
        }
        let title = format!("{key}: {} → {} ({})", old.label, new.label, n.event);
        let svg = diff_flamegraph_svg(
            &folded(old, o)?,
            &folded(new, n)?,
            &title,
            weight_unit(&n.event),
        )
        .with_context(|| format!("{key}: differential flame graph"))?;
        let dir = new.dir.join(DIR);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{key}.diff.svg"));
        write_atomic(&path, &svg)?;
        written.push(path);
    }
    Ok((written, refused))
}

pub fn cmd(old: &Path, new: &Path) -> anyhow::Result<ExitCode> {
    let old = set::load(old)?;
    let new = set::load(new)?;
    let (written, refused) = write(&old, &new)?;
    for p in &written {
        println!("wrote {}", p.display());
    }
    for r in &refused {
        eprintln!("refused: {r}");
    }
    if written.is_empty() && refused.is_empty() {
        anyhow::bail!(
            "no cell has a recorded flame graph in both {} and {} (run with --flamegraph)",
            old.label,
            new.label
        );
    }
    Ok(if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
