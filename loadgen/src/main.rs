//! `loadgen` binary: parse flags → `loadgen::run` → print (text, or JSON with `--json -`).
//! Exit status: 0 completed, 1 could not run / no connection ever established, 2 bad input.

use std::process::ExitCode;

use clap::Parser;
use loadgen::cli::Args;

fn main() -> ExitCode {
    let args = Args::parse();
    if args.floor {
        return floor(&args);
    }
    let spec = match args.to_spec() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("loadgen: {e:#}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = spec.validate() {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    if let Err(e) = loadgen::http::target::resolve(&spec.url) {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    // `--io uring` where io_uring is refused is bad input for this host, like a connection
    // count over its fd limit.
    if let Err(e) = loadgen::choose_io(&spec) {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    eprintln!("loadgen: {}", loadgen::text::headline(&spec));
    let report = match loadgen::run(&spec) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: run failed: {e:#}");
            return ExitCode::from(1);
        }
    };
    let json = serde_json::to_string_pretty(&report).expect("a Report always serializes");
    match args.json.as_deref() {
        Some("-") => println!("{json}"),
        other => {
            print!("{}", loadgen::text::summary(&report));
            if let Some(path) = other
                && let Err(e) = std::fs::write(path, json + "\n")
            {
                eprintln!("loadgen: cannot write {path}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    for p in &report.problems {
        eprintln!("loadgen: {p}");
    }
    if report.connections.established == 0 {
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

/// `--floor`: measure, then print JSON (`--json -`), or text plus an optional JSON file.
fn floor(args: &Args) -> ExitCode {
    let spec = args.to_floor_spec();
    if let Err(e) = spec.validate() {
        eprintln!("loadgen: {e}");
        return ExitCode::from(2);
    }
    let floor = loadgen::floor::measure(&spec);
    let json = serde_json::to_string_pretty(&floor).expect("a Floor always serializes");
    match args.json.as_deref() {
        Some("-") => println!("{json}"),
        other => {
            print!("{}", loadgen::floor::summary(&floor));
            if let Some(path) = other
                && let Err(e) = std::fs::write(path, json + "\n")
            {
                eprintln!("loadgen: cannot write {path}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
