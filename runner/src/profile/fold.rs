//! Bytes in, bytes out: `perf script` text → folded stacks → SVG, and the differential pair.
//! No processes and no files, so all of it is tested on a recorded fixture.

use inferno::collapse::Collapse;
use inferno::collapse::perf::{Folder, Options as CollapseOptions};
use inferno::differential::{self, Options as DiffOptions};
use inferno::flamegraph::{self, Options as FlameOptions, color::MultiPalette, color::Palette};

use super::Error;

/// Folds `perf script` output (as inferno-collapse-perf does): one `frame;…;frame count`
/// line per distinct stack, root frame first (the process name).
pub fn fold_perf_script(script: &[u8]) -> Result<Vec<u8>, Error> {
    fold_perf_script_from(script)
}

/// [`fold_perf_script`] over a reader (a `perf script` pipe).
pub(super) fn fold_perf_script_from(script: impl std::io::BufRead) -> Result<Vec<u8>, Error> {
    let mut options = CollapseOptions::default();
    // One thread: the output order is then the same on every machine.
    options.nthreads = 1;
    let mut folded = Vec::new();
    Folder::from(options)
        .collapse(script, &mut folded)
        .map_err(Error::io("collapsing perf script output"))?;
    Ok(folded)
}

/// `(weight, stacks)` of folded stacks: the sum of the counts and the number of lines. The
/// counts are the samples' periods as perf reports them (see [`super::weight_unit`]).
pub fn sample_count(folded: &[u8]) -> Result<(u64, u64), Error> {
    let text = std::str::from_utf8(folded).map_err(|e| Error::Folded(e.to_string()))?;
    let (mut weight, mut stacks) = (0u64, 0u64);
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        // The count is the last field; frame names may contain spaces (`<T as Trait>`).
        let count = line
            .rsplit_once(' ')
            .filter(|(stack, _)| !stack.trim().is_empty())
            .and_then(|(_, n)| n.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::Folded(format!(
                    "line {}: not `frame;…;frame count`: {line:?}",
                    i + 1
                ))
            })?;
        weight += count;
        stacks += 1;
    }
    Ok((weight, stacks))
}

fn svg_options(title: &str, unit: &str) -> FlameOptions<'static> {
    let mut options = FlameOptions::default();
    options.title = title.to_owned();
    options.colors = Palette::Multi(MultiPalette::Rust);
    // Colours from a hash of the frame name: the same function has the same colour in every
    // graph, and the SVG is byte-for-byte reproducible.
    options.hash = true;
    options.deterministic = true;
    options.count_name = unit.to_owned();
    options
}

/// An SVG flame graph of folded stacks; `unit` names their counts in tooltips (`ns`,
/// `cycles`, `samples`).
pub fn flamegraph_svg(folded: &[u8], title: &str, unit: &str) -> Result<Vec<u8>, Error> {
    let mut svg = Vec::new();
    flamegraph::from_reader(&mut svg_options(title, unit), folded, &mut svg)
        .map_err(|e| Error::Folded(format!("drawing flame graph: {e}")))?;
    Ok(svg)
}

/// Differential folded stacks (inferno-diff-folded): `stack before after` per line. The
/// `before` counts are scaled to the `after` total (`--normalize`), so two runs with different
/// sample totals (different throughput or window) compare by share of CPU time, not by volume.
pub fn diff_folded(before: &[u8], after: &[u8]) -> Result<Vec<u8>, Error> {
    let options = DiffOptions {
        normalize: true,
        strip_hex: true,
    };
    let mut out = Vec::new();
    differential::from_readers(options, before, after, &mut out)
        .map_err(Error::io("diffing folded stacks"))?;
    Ok(out)
}

/// A differential flame graph: the shape of `after`, coloured by the change from `before`
/// (red: more samples than before, blue: fewer; normalised as in [`diff_folded`]).
pub fn diff_flamegraph_svg(
    before: &[u8],
    after: &[u8],
    title: &str,
    unit: &str,
) -> Result<Vec<u8>, Error> {
    flamegraph_svg(&diff_folded(before, after)?, title, unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `perf script` output of a real recording, made with Debian's perf 6.1 on the 2-core
    /// development VM (no hardware counters, so the software `cpu-clock` event):
    /// `ping-tokio-hyper --workers 1` (release profile: line tables, no frame pointers) under
    /// `loadgen -c 16`, `perf record -e cpu-clock -F 199 --call-graph dwarf,8192 -p <pid>` for
    /// 0.5 s, then `perf script` (inlined frames on, perf's default). Kept: 8 of its 50 samples,
    /// whole and unedited except the build directory, replaced by `/build/pingmatrix/`.
    const SCRIPT: &[u8] = include_bytes!("fixtures/ping-tokio-hyper.perf-script");

    #[test]
    fn folds_a_recorded_perf_script_into_rust_user_frames() {
        let folded = fold_perf_script(SCRIPT).unwrap();
        let text = String::from_utf8(folded.clone()).unwrap();
        assert!(!text.is_empty());
        for line in text.lines() {
            let (stack, count) = line.rsplit_once(' ').unwrap();
            assert!(count.parse::<u64>().unwrap() > 0, "{line}");
            // Root frame: the thread's name (comm), here tokio's worker.
            assert!(stack.starts_with("tokio-rt-worker;"), "{line}");
        }
        // DWARF unwinding recovered frames of the service's own code, hyper and the runtime,
        // down to the thread's entry point.
        assert!(
            text.contains("ping_tokio_hyper::"),
            "no service frames in\n{text}"
        );
        assert!(
            text.contains("tokio::runtime::"),
            "no tokio frames in\n{text}"
        );
        assert!(
            text.contains("__rust_begin_short_backtrace"),
            "truncated stacks:\n{text}"
        );
        assert!(text.contains("hyper::"), "no hyper frames in\n{text}");
        // Every sample lands in the folded stacks, weighted by its period (ns of cpu-clock).
        let periods: Vec<u64> = String::from_utf8_lossy(SCRIPT)
            .lines()
            .filter(|l| l.ends_with(" cpu-clock: "))
            .map(|l| l.split_whitespace().rev().nth(1).unwrap().parse().unwrap())
            .collect();
        assert_eq!(periods.len(), 8);
        let (weight, stacks) = sample_count(&folded).unwrap();
        assert_eq!(weight, periods.iter().sum::<u64>());
        assert!(stacks > 1 && stacks <= 8);
    }

    #[test]
    fn draws_an_svg_with_the_title_and_the_frames() {
        let folded = fold_perf_script(SCRIPT).unwrap();
        let svg = String::from_utf8(flamegraph_svg(&folded, "ping · c64", "ns").unwrap()).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("ping · c64"));
        assert!(svg.contains("tokio::runtime::"));
        // Reproducible: the same input gives the same bytes.
        assert_eq!(
            svg.as_bytes(),
            flamegraph_svg(&folded, "ping · c64", "ns").unwrap()
        );
    }

    #[test]
    fn diff_normalises_before_to_the_after_total() {
        let before = b"main;a 30\nmain;b 10\n";
        let after = b"main;a 20\nmain;b 60\n";
        let diff = String::from_utf8(diff_folded(before, after).unwrap()).unwrap();
        let mut lines: Vec<&str> = diff.lines().collect();
        lines.sort();
        // before scaled by 80/40: a 60, b 20.
        assert_eq!(lines, ["main;a 60 20", "main;b 20 60"]);
        let svg = String::from_utf8(diff_flamegraph_svg(before, after, "diff", "samples").unwrap())
            .unwrap();
        assert!(svg.contains("main;b") || svg.contains(">b<") || svg.contains("b (")); // drawn
    }

    #[test]
    fn empty_or_malformed_folded_input_is_an_error_not_a_panic() {
        assert!(flamegraph_svg(b"", "t", "ns").is_err());
        assert!(sample_count(b"main;a x\n").is_err());
        // Garbage is refused with the line it is on, not drawn from whatever parsed.
        let e = sample_count(b"main;a 3\n\nnot a folded line\n").unwrap_err();
        assert!(e.to_string().contains("line 3:"), "{e}");
        assert!(sample_count(b" 5\n").is_err());
        assert_eq!(sample_count(b"").unwrap(), (0, 0));
        assert_eq!(sample_count(b"a;<T as X>::f 3\nb 4\n").unwrap(), (7, 2));
    }
}
