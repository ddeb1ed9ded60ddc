//! `matrix report` on a synthetic run: every chart is produced, parses as SVG/XML, carries
//! its title and legend, uses the same colour per service everywhere; results.md links the
//! plots; `--readme` rewrites only the marked section, from results.json.

use crate::support::fixtures;

use std::ffi::OsStr;

use crate::support::live::Scratch;
use fixtures::*;
use runner::report::charts::Kind;
use runner::results::set::load;

/// 3 services × /ping closed at c1/c16/c64 (pinned), /ping open at 3 rates, plus a second
/// profile so per-profile charts multiply.
fn full_matrix() -> Vec<(runner::results::schema::CellSpec, Perf)> {
    let mut v = Vec::new();
    for s in ["ping-tokio-hyper", "ping-monoio", "ping-may-minihttp"] {
        for c in [1, 16, 64] {
            v.push((
                spec(s, "ping", closed(c), "pinned", 3),
                Perf::new(base_rps(s, c) * (c as f64).min(16.0) / 16.0),
            ));
        }
        for r in [5000.0, 20000.0, 40000.0] {
            let mut p = Perf::new(r);
            p.noise = 0.001;
            // Capacity 1e6 / cpu_us_per_request req/s: 62.5k, 71k, 83k.
            p.cpu_us_per_request = match s {
                "ping-tokio-hyper" => 16.0,
                "ping-monoio" => 12.0,
                _ => 14.0,
            };
            v.push((spec(s, "ping-open", open(r), "pinned", 3), p));
        }
        let mut small = spec(s, "ping", closed(16), "k8s-small", 3);
        small.limits.cpu_quota = Some(0.2);
        v.push((small, Perf::new(base_rps(s, 16) * 0.2)));
    }
    v
}

fn svg_doc(text: &str) -> roxmltree::Document<'_> {
    let doc = roxmltree::Document::parse(text).expect("SVG parses as XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect()
}

#[test]
fn every_chart_is_valid_svg_with_title_legend_and_fixed_colours() {
    let d = Scratch::new("report-charts");
    let run = write_run(&d, "run", &MACHINE, &full_matrix());
    let set = load(&run).unwrap();
    let charts = runner::cmd::report::write(&set, None).unwrap();
    let kinds: Vec<Kind> = charts.iter().map(|c| c.kind).collect();
    for k in [
        Kind::Throughput,
        Kind::Spectrum,
        Kind::OpenLoop,
        Kind::Startup,
        Kind::Memory,
    ] {
        assert!(kinds.contains(&k), "no {k:?} chart in {kinds:?}");
    }
    // throughput ×2 (ping/pinned, ping/k8s-small), spectrum ×3, open loop ×1, startup ×2, memory ×2.
    assert_eq!(
        charts.len(),
        10,
        "{:?}",
        charts.iter().map(|c| &c.file).collect::<Vec<_>>()
    );
    let monoio = "#D55E00";
    for c in &charts {
        let on_disk = std::fs::read_to_string(run.join(&c.file)).unwrap();
        assert_eq!(on_disk, c.svg);
        let doc = svg_doc(&c.svg);
        let t = texts(&doc);
        assert!(
            t.iter().any(|x| x == &c.title),
            "{}: title missing in {t:?}",
            c.file
        );
        // Bar charts name services without the common "ping-" (labels that fit).
        assert!(
            t.iter().any(|x| x.contains("monoio")),
            "{}: no legend/label",
            c.file
        );
        assert!(
            c.svg.to_uppercase().contains(monoio),
            "{}: monoio not in its colour",
            c.file
        );
    }
    let spectrum = charts
        .iter()
        .find(|c| {
            c.kind == Kind::Spectrum && c.profile == "pinned" && c.file.contains("-ping-pinned-")
        })
        .unwrap();
    assert!(
        spectrum.file.ends_with("latency-ping-pinned-c64.svg"),
        "{}",
        spectrum.file
    );
    let t = texts(&svg_doc(&spectrum.svg));
    assert!(t.iter().any(|x| x == "99.9%"), "{t:?}");
    let tp = charts
        .iter()
        .find(|c| c.kind == Kind::Throughput && c.profile == "pinned")
        .unwrap();
    assert!(
        texts(&svg_doc(&tp.svg))
            .iter()
            .any(|x| x.contains("connections"))
    );

    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(md.starts_with("# pingmatrix results — run"), "{md}");
    assert!(md.contains("## Plots"));
    for c in &charts {
        assert!(
            md.contains(&format!("]({})", c.file)),
            "results.md lacks {}",
            c.file
        );
    }
}

#[test]
fn latency_level_can_be_chosen() {
    let d = Scratch::new("report-level");
    let run = write_run(&d, "run", &MACHINE, &full_matrix());
    let charts = runner::cmd::report::write(&load(&run).unwrap(), Some("c16")).unwrap();
    assert!(
        charts
            .iter()
            .any(|c| c.file == "plots/latency-ping-pinned-c16.svg")
    );
}

#[test]
fn readme_reference_section_comes_from_results_json() {
    let d = Scratch::new("report-readme");
    let run = write_run(&d, "run", &MACHINE, &full_matrix());
    let readme = d.join("README.md");
    let before = "# pingmatrix\n\n## Reference results\n\n<!-- pingmatrix:reference:begin -->\nhand-typed numbers\n<!-- pingmatrix:reference:end -->\n\n## Next\n";
    std::fs::write(&readme, before).unwrap();
    let report_cli = || {
        run_matrix([
            OsStr::new("report"),
            run.as_os_str(),
            OsStr::new("--readme"),
            readme.as_os_str(),
        ])
    };
    let out = report_cli();
    assert_success(&out);
    let text = std::fs::read_to_string(&readme).unwrap();
    assert!(!text.contains("hand-typed"));
    assert!(text.starts_with(
        "# pingmatrix\n\n## Reference results\n\n<!-- pingmatrix:reference:begin -->\n"
    ));
    assert!(text.ends_with("<!-- pingmatrix:reference:end -->\n\n## Next\n"));
    // The numbers are the run's: monoio peaks at c64 with 75k × 1.1 = 82.5k req/s.
    let res: runner::results::schema::ResultsFile =
        serde_json::from_slice(&std::fs::read(run.join("results.json")).unwrap()).unwrap();
    let peak = res
        .cells
        .iter()
        .find(|c| c.key == "ping-monoio__ping__c64__pinned")
        .unwrap();
    let mean = peak.requests_per_s.as_ref().unwrap().mean;
    assert!((mean / 82_500.0 - 1.0).abs() < 0.002, "{mean}");
    let want = format!("| ping-monoio | {:.1}k ± ", mean / 1000.0);
    assert!(text.contains(&want), "{want} not in {text}");
    assert!(text.contains("| c64 |"));
    // Links are relative to the README and point at files that exist.
    for link in [
        "run/plots/throughput-ping-pinned.svg",
        "run/plots/latency-ping-pinned-c64.svg",
        "run/results.md",
    ] {
        assert!(
            text.contains(&format!("({link})")),
            "missing link {link}: {text}"
        );
        assert!(d.join(link).is_file());
    }

    // Missing markers: exit 2, a clear message, README untouched, nothing half-done.
    std::fs::write(&readme, "# no markers\n").unwrap();
    let out = report_cli();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pingmatrix:reference:begin") && err.contains("not found"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), "# no markers\n");
}

/// `--latency-level c9999` used to be ignored silently (the default level was drawn).
#[test]
fn an_unknown_latency_level_is_an_error_before_anything_is_written() {
    let d = Scratch::new("report-level");
    let run = write_run(&d, "run", &MACHINE, &full_matrix());
    let out = run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--latency-level"),
        OsStr::new("c9999"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--latency-level c9999: no cell of this run has that level (levels: c1, c16, c64, r5000"
        ),
        "{err}"
    );
    assert!(!run.join("plots").exists());
}

/// `report --readme` on an interrupted run used to rewrite the README's headline ("0
/// repetitions per cell", services missing) without a word about the interruption.
#[test]
fn the_readme_headline_refuses_an_interrupted_run() {
    use runner::results::schema::{ResultsFile, RunStatus};
    let d = Scratch::new("report-interrupted");
    let run = write_run(&d, "run", &MACHINE, &full_matrix());
    let path = run.join("results.json");
    let mut res: ResultsFile = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    res.status = RunStatus::Interrupted;
    std::fs::write(&path, serde_json::to_vec_pretty(&res).unwrap()).unwrap();
    let readme = d.join("README.md");
    let before = "<!-- pingmatrix:reference:begin -->\nold\n<!-- pingmatrix:reference:end -->\n";
    std::fs::write(&readme, before).unwrap();
    let out = run_matrix([
        OsStr::new("report"),
        run.as_os_str(),
        OsStr::new("--readme"),
        readme.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is interrupted, not completed"), "{err}");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), before);
    // Without --readme the run's own page and plots are still written.
    assert_success(&run_matrix([OsStr::new("report"), run.as_os_str()]));
}

/// `--diff-flamegraph` used to draw a diff from whatever parsed of a `.folded` file of
/// garbage lines (exit 0).
#[test]
fn a_folded_file_of_garbage_lines_is_refused_with_its_line() {
    use runner::results::schema::{CellFlamegraph, CellResult};
    use runner::results::store::Store;
    let d = Scratch::new("report-garbage-folded");
    let profiled = |id: &str, folded: &str| {
        let run = write_run(&d, id, &MACHINE, &full_matrix());
        let store = Store::open(&run).unwrap();
        let key = "ping-monoio__ping__c64__pinned";
        let mut c: CellResult = store.read_cell(key).unwrap();
        std::fs::create_dir_all(run.join("flamegraphs")).unwrap();
        std::fs::write(run.join(format!("flamegraphs/{key}.folded")), folded).unwrap();
        std::fs::write(run.join(format!("flamegraphs/{key}.svg")), "<svg/>").unwrap();
        let profile = serde_json::json!({
            "status": "recorded", "event": "cpu-clock", "hardware_counters": false,
            "call_graph": {"method": "dwarf", "stack_bytes": 8192}, "frequency_hz": 1999,
            "samples": 2, "weight": 7, "weight_unit": "ns", "stacks": 2,
            "perf_version": "perf version 6.1", "pid": 1, "window_s": 1.0,
            "folded": format!("flamegraphs/{key}.folded"),
            "svg": format!("flamegraphs/{key}.svg"), "perf_data": null
        });
        c.flamegraph = Some(CellFlamegraph {
            rep: 6,
            profiled: true,
            result: None,
            profile: Some(serde_json::from_value(profile).unwrap()),
            error: None,
        });
        store.write_cell(&c).unwrap();
        run
    };
    let old = profiled("old", "main;a 3\nmain;b 4\n");
    let new = profiled("new", "main;a 3\nsegfault at 0x0 in the middle\nmain;b 4\n");
    let diff = |a: &std::path::Path, b: &std::path::Path| {
        run_matrix([
            OsStr::new("report"),
            OsStr::new("--diff-flamegraph"),
            a.as_os_str(),
            b.as_os_str(),
        ])
    };
    let out = diff(&old, &new);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ping-monoio__ping__c64__pinned.folded") && err.contains("line 2:"),
        "{err}"
    );
    assert!(
        !new.join("flamegraphs/ping-monoio__ping__c64__pinned.diff.svg")
            .exists()
    );
    // The well-formed pair still diffs.
    let out = diff(&old, &old);
    assert_success(&out);
}
