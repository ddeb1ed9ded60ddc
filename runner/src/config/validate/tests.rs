//! Whole files through `parse`: what is accepted, and the refusals that depend on the
//! machine's limits, on a fixed host. Every other refusal is a row of the integration tests'
//! table (`runner/tests/it/config.rs`), through the real binary.

use super::host::Host;
use super::*;

pub(super) const GOOD: &str = r#"
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

pub(super) fn parse_str(text: &str) -> Result<Matrix, ConfigErrors> {
    parse(Path::new("m.toml"), text, None)
}

/// A machine with the common 1024 soft open-file limit, a higher hard one, and CPU 0.
fn small_host() -> Host {
    Host {
        allowed_cpus: vec![0],
        open_files: Some((1024, 65536)),
        local_ports: Some((32768, 60999)),
    }
}

fn parse_on_small_host(text: &str) -> Result<Matrix, ConfigErrors> {
    parse_on(&small_host(), Path::new("m.toml"), text, None)
}

fn messages(e: &ConfigErrors) -> Vec<String> {
    e.0.iter().map(ToString::to_string).collect()
}

#[test]
fn connections_beyond_the_soft_open_file_limit_say_how_to_raise_it() {
    assert!(parse_on_small_host(GOOD).is_ok());
    let text = GOOD.replace("connections = [1, 16]", "connections = [1, 2000]");
    let e = parse_on_small_host(&text).unwrap_err();
    assert_eq!(
        messages(&e),
        [
            "m.toml:13:46: scenarios[0].load.connections: 2000 connections need about 2064 open \
          files in the service, but `ulimit -n` is 1024 (services inherit it); raise it with \
          `ulimit -n 65536` before running"
        ]
    );
    let text = GOOD.replace("max_connections = 4", "max_connections = 30000");
    let e = parse_on_small_host(&text).unwrap_err();
    assert!(
        e.0.iter()
            .all(|e| e.field == "scenarios[1].load.max_connections" && e.line == 18),
        "{e}"
    );
    assert!(e.to_string().contains("(32768-60999) has 28232"), "{e}");
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
