//! `matrix k8s render` (manifests per cell, no cluster needed) and `matrix ingest` (the
//! generator Jobs' reports → a result set).

use std::process::ExitCode;

use crate::cli::{IngestArgs, K8sRenderArgs};
use crate::k8s::{self, Images};
use crate::plan::{self, Plan};
use crate::results::schema::{CellSpec, RunRecord, RunStatus};
use crate::results::store::{self, Store};
use crate::sample::now_unix_us;
use crate::{binaries, config};

pub fn render(args: &K8sRenderArgs) -> anyhow::Result<ExitCode> {
    let m = config::load(&args.select.config, binaries::exe_dir().as_deref())?;
    let p = plan::expand(&m, &args.select.plan_options())?;
    let images = Images {
        prefix: args.image_prefix.clone(),
        tag: args.tag.clone(),
    };
    let (n, skipped) = k8s::render(&m, &p.cells().collect::<Vec<_>>(), &images, &args.out)?;
    println!("{n} cell(s) rendered into {}", args.out.display());
    for s in skipped {
        println!("skipped {s}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn ingest(args: &IngestArgs) -> anyhow::Result<ExitCode> {
    let plan_path = args.manifests.join("plan.json");
    let planned: Vec<CellSpec> = crate::results::store::read_json(&plan_path)?;
    let matrix_path = args.manifests.join("matrix.toml");
    let text = std::fs::read_to_string(&matrix_path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", matrix_path.display()))?;
    // Every report is checked before the result directory is created.
    let mut filing = k8s::ingest::file_reports(&args.reports, &planned)?;
    for p in &filing.unknown {
        eprintln!(
            "skipped {}: no cell of {} has that key",
            p.display(),
            plan_path.display()
        );
    }
    let now_ms = now_unix_us() / 1000;
    let (store, run_id) = Store::create_new(&args.out, &store::run_id(now_ms, "k8s"))?;
    let mut cells = Vec::new();
    for spec in &planned {
        let filed = filing.cells.remove(&spec.key).unwrap_or_default();
        if !filed.is_empty() && filed.len() < spec.repetitions as usize {
            eprintln!(
                "{}: {} of {} planned repetitions reported",
                spec.key,
                filed.len(),
                spec.repetitions
            );
        }
        let reports = filed.into_iter().map(|f| (f.rep, f.report)).collect();
        if let Some(c) = k8s::ingest::cell_result(&run_id, spec, reports) {
            store.write_cell(&c)?;
            cells.push(c);
        }
    }
    anyhow::ensure!(
        !cells.is_empty(),
        "no reports for any planned cell in {} (expected <cell key>.<n>.json)",
        args.reports.display()
    );
    let specs: Vec<CellSpec> = cells.iter().map(|c| c.cell.clone()).collect();
    let loadgen = std::path::PathBuf::from("loadgen");
    let mut run = RunRecord::new(
        run_id.clone(),
        now_ms,
        matrix_path.display().to_string(),
        text,
        specs.clone(),
        // The machine that ingested, not the cluster's nodes (not visible from reports).
        crate::env::collect(
            &matrix_path,
            &loadgen,
            Default::default(),
            &Default::default(),
        ),
    );
    store.write_run(&run)?;
    let plan = Plan {
        groups: vec![specs],
        calibration: vec![],
        reference: None,
        drift_points: 0,
        baseline: String::new(),
        syscalls_off: Some("not counted"),
        count_instructions: false,
        not_applicable: vec![],
    };
    crate::finish::write_all(&store, &mut run, &plan, RunStatus::Completed, None)?;
    println!(
        "{} cell(s) ingested into {} (server CPU and memory: not measured in the cluster)",
        cells.len(),
        store.dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
