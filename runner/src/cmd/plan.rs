//! `matrix plan` (and `matrix run --dry-run`): parse → plan → print. Beside the default
//! matrix it also estimates the complete sweep (`matrix-full.toml` next to it), so the choice
//! between them is made with both times in view.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::SelectArgs;
use crate::results::units::min_sec;
use crate::{binaries, config, plan};

/// The complete sweep's file name, looked up next to the default `matrix.toml`.
const FULL: &str = "matrix-full.toml";

pub fn cmd(sel: &SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let p = plan::expand(&m, &sel.plan_options())?;
    print!("{}", plan::render(&p));
    if let Some(line) = full_sweep_line(&sel.config, &sel.plan_options()) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `matrix calibrate --dry-run`: the calibration plan.
pub fn calibration(sel: &SelectArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&sel.config, binaries::exe_dir().as_deref())?;
    let opts = plan::Options {
        calibration: plan::Calibrate::Only,
        ..sel.plan_options()
    };
    print!("{}", plan::render(&plan::expand(&m, &opts)?));
    Ok(ExitCode::SUCCESS)
}

/// "complete sweep matrix-full.toml: 252 cells, estimated 29:01" when `config` is a
/// `matrix.toml` with the full sweep beside it (and that file plans without error).
fn full_sweep_line(config: &Path, opts: &plan::Options) -> Option<String> {
    if config.file_name()? != "matrix.toml" {
        return None;
    }
    let full = config.with_file_name(FULL);
    let m = config::load(&full, binaries::exe_dir().as_deref()).ok()?;
    // The whole sweep, also under --quick (its quick subset is not the complete sweep).
    let all = plan::Options {
        quick: false,
        ..opts.clone()
    };
    let p = plan::expand(&m, &all).ok()?;
    Some(format!(
        "complete sweep {}: {} cells, estimated wall time {} (run it with --config {})",
        full.display(),
        p.cell_count(),
        min_sec(p.estimate_s()),
        full.display()
    ))
}

#[cfg(test)]
mod tests {
    //! Every run duration the README, the docs and the matrix files state agrees with
    //! `matrix plan`'s estimate within 20 %; a duration written anywhere else fails too, so
    //! none is typed by hand and left to go stale.

    use std::path::{Path, PathBuf};

    use crate::plan;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// (file, the phrase stating the duration as "~N min", its matrix file, --quick).
    const CLAIMS: &[(&str, &str, &str, bool)] = &[
        ("README.md", "then a ~1 min subset", "matrix.toml", true),
        ("README.md", "runs it (~21 min,", "matrix.toml", false),
        (
            "README.md",
            "the default matrix (~21 min)",
            "matrix.toml",
            false,
        ),
        (
            "README.md",
            "the complete sweep (~68 min)",
            "matrix-full.toml",
            false,
        ),
        (
            "docs/running.md",
            "calibration, ~1 min",
            "matrix.toml",
            true,
        ),
        (
            "docs/running.md",
            "incl. calibration, ~21 min",
            "matrix.toml",
            false,
        ),
        (
            "docs/running.md",
            "261 cells, ~68 min",
            "matrix-full.toml",
            false,
        ),
        (
            "matrix.toml",
            "~21 min on a 2-core machine",
            "matrix.toml",
            false,
        ),
        ("matrix.toml", "subset in ~1 min", "matrix.toml", true),
        (
            "matrix.toml",
            "everywhere, ~68 min",
            "matrix-full.toml",
            false,
        ),
        (
            "matrix-full.toml",
            "~68 min on a 2-core machine",
            "matrix-full.toml",
            false,
        ),
        (
            "matrix-full.toml",
            "the ~21 min subset",
            "matrix.toml",
            false,
        ),
        (
            "matrix-counted.toml",
            "~11 min on a 2-core machine",
            "matrix-counted.toml",
            false,
        ),
    ];

    /// Durations that are not a matrix run's, with what they are.
    const OTHERS: &[(&str, &str)] = &[
        // scripts/experiments/open-loop-cpu.sh's own run, not a matrix.
        ("docs/counted-cost.md", "(defaults, ~4 min)"),
        // scripts/lib/test_counted_sensitivity.py's trials.
        ("docs/reading-a-run.md", "in about 13 minutes on 2 cores"),
        // How long before, not how long.
        (
            "docs/generator-cost.md",
            "the same command ten minutes earlier",
        ),
        // The first build of a fresh clone, measured, not planned.
        ("README.md", "first time that is about 7 minutes of builds"),
        // The gate's variant builds.
        (
            "docs/variants-and-gate.md",
            "variants once (about two minutes, then cached",
        ),
    ];

    /// The file's text with line breaks (and the comment marks after them) folded, so a
    /// phrase may wrap.
    fn flat(file: &str) -> Option<String> {
        let text = std::fs::read_to_string(repo().join(file)).ok()?;
        Some(text.replace("\n# ", " ").replace('\n', " "))
    }

    fn minutes(phrase: &str) -> f64 {
        let n = phrase
            .split('~')
            .nth(1)
            .and_then(|t| t.split(" min").next());
        n.and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{phrase:?}: no \"~N min\""))
    }

    fn estimate_min(config: &str, quick: bool) -> f64 {
        // The workspace's binaries (target/<profile>/, above this test's deps/): the files
        // name them, and loading checks they exist.
        let exe = std::env::current_exe().unwrap();
        let bins = exe.parent().and_then(Path::parent);
        let m = crate::config::load(&repo().join(config), bins).unwrap();
        let opts = plan::Options {
            quick,
            ..plan::Options::default()
        };
        plan::expand(&m, &opts).unwrap().estimate_s() / 60.0
    }

    #[test]
    fn stated_durations_agree_with_the_plan() {
        let mut bad = Vec::new();
        for &(file, phrase, config, quick) in CLAIMS {
            if !flat(file).unwrap().contains(phrase) {
                bad.push(format!("{file}: {phrase:?} is gone (update CLAIMS)"));
                continue;
            }
            let (said, plan) = (minutes(phrase), estimate_min(config, quick));
            if (said - plan).abs() > 0.2 * plan {
                bad.push(format!(
                    "{file}: {phrase:?} but `matrix plan --config {config}{}` estimates {plan:.1} min",
                    if quick { " --quick" } else { "" }
                ));
            }
        }
        assert!(bad.is_empty(), "{bad:#?}");
    }

    #[test]
    fn no_other_duration_is_typed_by_hand() {
        let re = regex::Regex::new(
            r"(?i)(~ ?\d+([.,]\d+)? ?(min|minutes|h|hours)\b|~\d+:\d\d|about (a|an|one|two|five|ten|twenty|thirty|half an|\d+) (min|minute|minutes|hour|hours)\b|half an hour|\b(ten|twenty|thirty)[- ]minutes?\b)",
        )
        .unwrap();
        let mut files = vec![
            "README.md".to_string(),
            "matrix.toml".into(),
            "matrix-full.toml".into(),
            "matrix-counted.toml".into(),
            "matrix-variants.toml".into(),
        ];
        for e in std::fs::read_dir(repo().join("docs")).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if name.ends_with(".md") {
                files.push(format!("docs/{name}"));
            }
        }
        let mut stray = Vec::new();
        for file in &files {
            let Some(flat) = flat(file) else { continue };
            for m in re.find_iter(&flat) {
                let known = CLAIMS
                    .iter()
                    .map(|c| (c.0, c.1))
                    .chain(OTHERS.iter().copied())
                    .any(|(f, p)| f == file && p.contains(m.as_str()) && flat.contains(p));
                if !known {
                    stray.push(format!("{file}: {:?}", m.as_str()));
                }
            }
        }
        assert!(
            stray.is_empty(),
            "durations not checked against `matrix plan` (state them as \"~N min\" in CLAIMS, or in OTHERS if no matrix run's): {stray:#?}"
        );
    }
}
