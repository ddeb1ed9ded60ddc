//! Whole files through `parse`: what is accepted, and where each problem is reported.

use super::host::Host;
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
fn load_levels_must_suit_loadgen() {
    let text = GOOD
        .replace(
            "duration_ms = 200",
            "duration_ms = 200\nloadgen_threads = 4",
        )
        .replace("connections = [1, 16]", "connections = [16], pipeline = 2")
        .replace(
            "path = \"/ping\"\nload = { model = \"closed\"",
            "path = \"/ping\"\nkeepalive = false\nload = { model = \"closed\"",
        );
    let e = parse_on_small_host(&text).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|e| e.field.as_str()).collect();
    // max_connections = 4 is fine for 4 threads; pipelining without keep-alive is not.
    assert_eq!(fields, ["scenarios[0].keepalive"], "{e}");
    let text = GOOD.replace(
        "duration_ms = 200",
        "duration_ms = 200\nloadgen_threads = 8",
    );
    let e = parse_on_small_host(&text).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "scenarios[0].load.connections",
            "scenarios[1].load.max_connections"
        ],
        "{e}"
    );
    assert!(
        e.0[0]
            .message
            .contains("fewer connections (1) than loadgen_threads (8)"),
        "{e}"
    );
}

#[test]
fn request_paths_are_printable_ascii() {
    for bad in ["/a b", "/a\\r\\nX: y", "/é"] {
        let text = GOOD.replacen("path = \"/ping\"", &format!("path = \"{bad}\""), 1);
        let e = parse_on_small_host(&text).unwrap_err();
        assert_eq!(e.0[0].field, "scenarios[0].path", "{bad}: {e}");
        assert_eq!(e.0.len(), 1, "{e}");
    }
}

#[test]
fn every_window_and_timeout_is_bounded() {
    for (key, v) in [
        ("warmup_ms", "3600001"),
        ("cooldown_ms", "3600001"),
        ("stop_grace_ms", "3600001"),
        ("startup_timeout_ms", "0"),
        ("request_timeout_ms", "0"),
        ("repetitions", "1001"),
        ("loadgen_threads", "0"),
    ] {
        let text = GOOD.replace(
            "duration_ms = 200",
            &format!("duration_ms = 200\n{key} = {v}"),
        );
        let e = parse_on_small_host(&text).unwrap_err();
        assert_eq!(messages(&e).len(), 1, "{e}");
        assert!(
            e.0[0]
                .to_string()
                .starts_with(&format!("m.toml:5:{}: defaults.{key}: ", key.len() + 4)),
            "{e}"
        );
    }
    let text = GOOD.replace("4095", "0") + "workers = 1025\nmemory_max_mib = 17000000\n";
    let e = parse_on_small_host(&text).unwrap_err();
    let fields: Vec<&str> = e.0.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["profiles[0].memory_max_mib", "profiles[0].workers"],
        "{e}"
    );
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
            ("defaults.duration_ms", 10, 15),
            ("defaults.repetitions", 8, 15)
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
