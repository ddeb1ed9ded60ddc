//! The matrix file through the real `matrix` binary: every bad file is refused with exit 2 and
//! a `file:line:col: field: message` line before anything runs (in `matrix plan` and
//! `matrix run` alike), and what is accepted runs — including paths with spaces.
//!
//! The refusals are one table (`REJECTED`): each row is the base matrix with some text
//! replaced and some appended, and the stderr fragments it must be refused with. The
//! refusals that depend on this machine's limits (open files, ports) stay unit tests with a
//! fixed host (`config/validate/tests.rs`).

use std::path::Path;
use std::process::Output;

use crate::support::fixtures::{assert_success, run_matrix};
use crate::support::live::{Scratch, bin, write_config};
use runner::limits::cpus::allowed_cpus;

/// The base matrix: one service, one closed-loop scenario at 4 connections, one profile on
/// the first allowed CPU (`{cpu}`). Line numbers matter: rows point at them; what `tail`
/// appends starts on line 20.
const BASE: &str = r#"[defaults]
loadgen = "/bin/true"
warmup_ms = 100
duration_ms = 200
repetitions = 1

[[services]]
name = "svc"
binary = "/bin/true"

[[scenarios]]
name = "ping"
path = "/ping"
load = { model = "closed", connections = [4] }

[[profiles]]
name = "pinned"
server_cpus = "{cpu}"
loadgen_cpus = "{cpu}"
"#;

/// The one TOML builder: `BASE` with each `(from, to)` replaced (every `from` must occur,
/// so a row cannot go stale silently), then `tail` appended.
fn matrix_toml(edits: &[(&str, &str)], tail: &str) -> String {
    let mut t = BASE.to_string();
    for (from, to) in edits {
        assert!(t.contains(from), "{from:?} is not in the base matrix");
        t = t.replace(from, to);
    }
    t.replace("{cpu}", &allowed_cpus()[0].to_string()) + tail
}

/// `load = { … }` on line 14 instead of the closed loop at c4.
const LOAD: &str = r#"load = { model = "closed", connections = [4] }"#;
const CLOSED: &str = r#"{ model = "closed", connections = [4] }"#;
/// The service's `binary = …` line (line 9), where rows add its `args`.
const BIN: &str = r#"binary = "/bin/true""#;

/// One refused matrix file.
struct Rejected {
    name: &'static str,
    edits: &'static [(&'static str, &'static str)],
    tail: &'static str,
    /// Each must be on stderr.
    want: &'static [&'static str],
    /// How many error lines (`…/m.toml:line:col: …`), where the count itself is the point.
    errors: Option<usize>,
}

const fn row(
    name: &'static str,
    edits: &'static [(&'static str, &'static str)],
    tail: &'static str,
    want: &'static [&'static str],
) -> Rejected {
    Rejected {
        name,
        edits,
        tail,
        want,
        errors: None,
    }
}

const fn only(mut r: Rejected, errors: usize) -> Rejected {
    r.errors = Some(errors);
    r
}

const REJECTED: &[Rejected] = &[
    row(
        "count_syscalls that is not a boolean",
        &[(
            "repetitions = 1",
            "repetitions = 1\ncount_syscalls = \"yes\"",
        )],
        "",
        &["m.toml:6:18:", "expected a boolean"],
    ),
    // Load levels.
    row(
        "duplicate connection level, at the repeated value",
        &[("connections = [4]", "connections = [4, 16, 4]")],
        "",
        &[
            "m.toml:14:50: scenarios[0].load.connections",
            "level c4 appears twice",
        ],
    ),
    row(
        "duplicate rate level",
        &[(
            CLOSED,
            r#"{ model = "open", rates_per_s = [500, 500.0], max_connections = 4 }"#,
        )],
        "",
        &["scenarios[0].load.rates_per_s", "level r500 appears twice"],
    ),
    row(
        "connections beyond open files and local ports",
        &[("connections = [4]", "connections = [4, 100000]")],
        "",
        &[
            "m.toml:14:",
            "scenarios[0].load.connections",
            "ip_local_port_range",
        ],
    ),
    row(
        "max_connections beyond open files and local ports",
        &[(
            CLOSED,
            r#"{ model = "open", rates_per_s = [500], max_connections = 100000 }"#,
        )],
        "",
        &["scenarios[0].load.max_connections", "ip_local_port_range"],
    ),
    row(
        "absurd rate",
        &[(
            CLOSED,
            r#"{ model = "open", rates_per_s = [500, 20000000], max_connections = 4 }"#,
        )],
        "",
        &["scenarios[0].load.rates_per_s", "at most 10000000"],
    ),
    only(
        row(
            "pipelining without keep-alive",
            &[
                (
                    "duration_ms = 200",
                    "duration_ms = 200\nloadgen_threads = 4",
                ),
                ("connections = [4]", "connections = [16], pipeline = 2"),
                ("path = \"/ping\"", "path = \"/ping\"\nkeepalive = false"),
            ],
            "",
            &["scenarios[0].keepalive"],
        ),
        1,
    ),
    only(
        row(
            "fewer connections than loadgen threads",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\nloadgen_threads = 8",
            )],
            "\n[[scenarios]]\nname = \"open\"\npath = \"/ping\"\n\
             load = { model = \"open\", rates_per_s = [500.0], max_connections = 4 }\n",
            &[
                "scenarios[0].load.connections: ",
                "fewer connections (4) than loadgen_threads (8)",
                "scenarios[1].load.max_connections",
            ],
        ),
        2,
    ),
    row(
        "dangling reference and an empty level list, both reported",
        &[
            (
                "duration_ms = 200",
                "duration_ms = 200\nreference = \"svc/ping/c99/pinned\"",
            ),
            ("connections = [4]", "connections = []"),
        ],
        "",
        &["defaults.reference", "scenarios[0].load.connections"],
    ),
    // Churn values, where they are written ("load = { model = " is 17 columns: the model
    // at 18, the connections list at 41, its first value at 42, cycles at 55).
    row(
        "churn with no connections and one cycle",
        &[(
            LOAD,
            r#"load = { model = "churn", connections = [0], cycles = 1 }"#,
        )],
        "",
        &[
            "m.toml:14:41: scenarios[0].load.connections: needs at least one level",
            "m.toml:14:55: scenarios[0].load.cycles: must be between 2",
        ],
    ),
    row(
        "churn with too many cycles",
        &[(
            LOAD,
            r#"load = { model = "churn", connections = [9], cycles = 101 }"#,
        )],
        "",
        &["m.toml:14:55: scenarios[0].load.cycles", "and 100"],
    ),
    row(
        "churn without cycles",
        &[(LOAD, r#"load = { model = "churn", connections = [9] }"#)],
        "",
        &["m.toml:14:18: scenarios[0].load.cycles: churn model needs cycles"],
    ),
    row(
        "churn beyond open files and local ports",
        &[(
            LOAD,
            r#"load = { model = "churn", connections = [4000000], cycles = 2 }"#,
        )],
        "",
        &["m.toml:14:42: scenarios[0].load.connections"],
    ),
    row(
        "an unknown protocol",
        &[(
            LOAD,
            r#"protocol = "h3"
load = { model = "closed", connections = [4] }"#,
        )],
        "",
        &["m.toml:14:12: scenarios[0].protocol: unknown protocol \"h3\""],
    ),
    row(
        "streams on HTTP/1.1",
        &[(
            LOAD,
            r#"load = { model = "closed", connections = [4], streams = 10 }"#,
        )],
        "",
        &[
            "m.toml:14:",
            "scenarios[0].load.streams: streams are HTTP/2's",
        ],
    ),
    row(
        "pipelining over HTTP/2",
        &[(
            LOAD,
            r#"protocol = "h2"
load = { model = "closed", connections = [4], pipeline = 16 }"#,
        )],
        "",
        &[
            "m.toml:15:",
            "scenarios[0].load.pipeline: HTTP/2 does not pipeline",
        ],
    ),
    row(
        "TLS with a pipelined load",
        &[(
            LOAD,
            r#"tls = true
load = { model = "closed", connections = [4], pipeline = 16 }"#,
        )],
        "",
        &[
            "m.toml:15:",
            "scenarios[0].load.pipeline: tls = true with a pipelined load",
        ],
    ),
    row(
        "TLS churn",
        &[(
            LOAD,
            r#"tls = true
load = { model = "churn", connections = [9], cycles = 2 }"#,
        )],
        "",
        &["scenarios[0].load.model: churn opens and closes cleartext HTTP/1.1 connections"],
    ),
    row(
        "streams over HTTP/1.1 with TLS",
        &[(
            LOAD,
            r#"tls = true
load = { model = "closed", connections = [4], streams = 10 }"#,
        )],
        "",
        &["scenarios[0].load.streams: streams are HTTP/2's"],
    ),
    row(
        "HTTP/2 without keep-alive",
        &[(
            LOAD,
            r#"protocol = "h2"
keepalive = false
load = { model = "closed", connections = [4] }"#,
        )],
        "",
        &["scenarios[0].keepalive: HTTP/2 keeps its connections open"],
    ),
    row(
        "HTTP/2 churn",
        &[(
            LOAD,
            r#"protocol = "h2"
load = { model = "churn", connections = [9], cycles = 2 }"#,
        )],
        "",
        &["scenarios[0].load.model: churn opens and closes HTTP/1.1 connections"],
    ),
    row(
        "churn with a closed-loop field",
        &[(
            LOAD,
            r#"load = { model = "churn", connections = [9], cycles = 2, pipeline = 4 }"#,
        )],
        "",
        &[
            "m.toml:14:",
            "scenarios[0].load.pipeline: only for model = \"closed\"",
        ],
    ),
    row(
        "cycles on a closed-loop scenario",
        &[(
            LOAD,
            r#"load = { model = "closed", connections = [4], cycles = 2 }"#,
        )],
        "",
        &["scenarios[0].load.cycles: only for model = \"churn\""],
    ),
    // Names: service "a__b" × scenario "c" and service "a" × scenario "b__c" both make the
    // key "a__b__c__c4__pinned"; "a_" + "__" + "b" and "a" + "__" + "_b" are one key too.
    row(
        "names that could collide in a cell key",
        &[
            ("name = \"svc\"", "name = \"a__b\""),
            ("name = \"ping\"", "name = \"b__c\""),
        ],
        "\n[[services]]\nname = \"a\"\nbinary = \"/bin/true\"\n",
        &[
            "m.toml:8:8: services[0].name",
            "m.toml:12:8: scenarios[0].name",
            "\"__\"",
        ],
    ),
    row(
        "a name ending in an underscore",
        &[("name = \"svc\"", "name = \"svc_\"")],
        "",
        &["m.toml:8:8: services[0].name", "'_'"],
    ),
    // Windows, timeouts and bounds.
    row(
        "a duration beyond an hour",
        &[("duration_ms = 200", "duration_ms = 9223372036854775807")],
        "",
        &["m.toml:4:15: defaults.duration_ms", "at most 3600000 ms"],
    ),
    only(
        row(
            "a warm-up beyond an hour",
            &[("warmup_ms = 100", "warmup_ms = 3600001")],
            "",
            &["m.toml:3:13: defaults.warmup_ms: "],
        ),
        1,
    ),
    only(
        row(
            "a cool-down beyond an hour",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\ncooldown_ms = 3600001",
            )],
            "",
            &["m.toml:5:15: defaults.cooldown_ms: "],
        ),
        1,
    ),
    only(
        row(
            "a stop grace beyond an hour",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\nstop_grace_ms = 3600001",
            )],
            "",
            &["m.toml:5:17: defaults.stop_grace_ms: "],
        ),
        1,
    ),
    only(
        row(
            "a zero start-up timeout",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\nstartup_timeout_ms = 0",
            )],
            "",
            &["m.toml:5:22: defaults.startup_timeout_ms: "],
        ),
        1,
    ),
    only(
        row(
            "a zero request timeout",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\nrequest_timeout_ms = 0",
            )],
            "",
            &["m.toml:5:22: defaults.request_timeout_ms: "],
        ),
        1,
    ),
    row(
        "both timeouts zero",
        &[(
            "repetitions = 1",
            "repetitions = 1\nrequest_timeout_ms = 0\nstartup_timeout_ms = 0",
        )],
        "",
        &[
            "m.toml:6:22: defaults.request_timeout_ms",
            "m.toml:7:22: defaults.startup_timeout_ms",
        ],
    ),
    only(
        row(
            "more than 1000 repetitions",
            &[("repetitions = 1", "repetitions = 1001")],
            "",
            &["m.toml:5:15: defaults.repetitions: "],
        ),
        1,
    ),
    only(
        row(
            "zero loadgen threads",
            &[(
                "duration_ms = 200",
                "duration_ms = 200\nloadgen_threads = 0",
            )],
            "",
            &["m.toml:5:19: defaults.loadgen_threads: "],
        ),
        1,
    ),
    row(
        "100000 workers",
        &[],
        "workers = 100000\n",
        &["m.toml:20:11: profiles[0].workers", "at most 1024"],
    ),
    only(
        row(
            "1025 workers and a memory limit beyond any machine",
            &[],
            "workers = 1025\nmemory_max_mib = 17000000\n",
            &[
                "profiles[0].memory_max_mib",
                "m.toml:20:11: profiles[0].workers",
            ],
        ),
        2,
    ),
    // [quick] is checked like [defaults], and does not take the blame for them.
    row(
        "zero quick repetitions",
        &[],
        "\n[quick]\ncells = [\"ping/c4/pinned\"]\nrepetitions = 0\n",
        &["m.toml:23:15: quick.repetitions"],
    ),
    row(
        "an error in defaults after [quick]",
        &[
            (
                "[defaults]\n",
                "[quick]\ncells = [\"ping/c4/pinned\"]\nrepetitions = 2\n\n[defaults]\n",
            ),
            ("repetitions = 1", "repetitions = 0"),
        ],
        "",
        &["m.toml:9:15: defaults.repetitions"],
    ),
    only(
        row(
            "two errors in defaults after [quick] with the same keys",
            &[
                (
                    "[defaults]\n",
                    "[quick]\ncells = [\"ping/c4/pinned\"]\nrepetitions = 2\nduration_ms = 100\n\n[defaults]\n",
                ),
                ("duration_ms = 200", "duration_ms = 0"),
                ("repetitions = 1", "repetitions = 0"),
            ],
            "",
            &[
                "m.toml:9:15: defaults.duration_ms",
                "m.toml:10:15: defaults.repetitions",
            ],
        ),
        2,
    ),
    // Request headers (F15): anything that would break the request, refused at the key.
    only(
        row(
            "a header name with a space",
            &[(
                "path = \"/ping\"",
                "path = \"/ping\"\nheaders = [\"X-Ok: 1\", \"X A: b\"]",
            )],
            "",
            &["m.toml:14:11: scenarios[0].headers[1]", "not a header name"],
        ),
        1,
    ),
    only(
        row(
            "CR LF in a header value",
            &[(
                "path = \"/ping\"",
                "path = \"/ping\"\nheaders = [\"X-A: b\\r\\nX-Forged: 1\"]",
            )],
            "",
            &["m.toml:14:11: scenarios[0].headers[0]", "CR or LF"],
        ),
        1,
    ),
    only(
        row(
            "a Host header (loadgen writes it)",
            &[(
                "path = \"/ping\"",
                "path = \"/ping\"\nheaders = [\"Host: elsewhere\"]",
            )],
            "",
            &[
                "m.toml:14:11: scenarios[0].headers[0]",
                "written by loadgen",
            ],
        ),
        1,
    ),
    only(
        row(
            "an unknown built-in header set",
            &[(
                "path = \"/ping\"",
                "path = \"/ping\"\nheaders = \"firefox\"",
            )],
            "",
            &["m.toml:14:11: scenarios[0].headers", "known: browser-like"],
        ),
        1,
    ),
    only(
        row(
            "headers that are not a list",
            &[("path = \"/ping\"", "path = \"/ping\"\nheaders = 3")],
            "",
            &[
                "m.toml:14:11: scenarios[0].headers",
                "list of \"Name: value\"",
            ],
        ),
        1,
    ),
    // Paths, binaries, CPUs.
    only(
        row(
            "a space in the request path",
            &[("path = \"/ping\"", "path = \"/a b\"")],
            "",
            &["m.toml:13:8: scenarios[0].path"],
        ),
        1,
    ),
    only(
        row(
            "CR LF in the request path",
            &[("path = \"/ping\"", "path = \"/a\\r\\nX: y\"")],
            "",
            &["m.toml:13:8: scenarios[0].path"],
        ),
        1,
    ),
    only(
        row(
            "a non-ASCII request path",
            &[("path = \"/ping\"", "path = \"/é\"")],
            "",
            &["m.toml:13:8: scenarios[0].path"],
        ),
        1,
    ),
    row(
        "control characters in a service binary",
        &[("binary = \"/bin/true\"", "binary = \"/bin/true\\r\\nX\"")],
        "",
        &["m.toml:9:10: services[0].binary", "control character"],
    ),
    row(
        "control characters in the loadgen path",
        &[("loadgen = \"/bin/true\"", "loadgen = \"/bin/true\\n\"")],
        "",
        &["m.toml:2:11: defaults.loadgen", "control character"],
    ),
    only(
        row(
            "a missing service binary",
            &[(
                "binary = \"/bin/true\"",
                "binary = \"/nonexistent/ping-nope\"",
            )],
            "",
            &["m.toml:9:10: services[0].binary", "not found"],
        ),
        1,
    ),
    row(
        "a CPU this machine does not have",
        &[("server_cpus = \"{cpu}\"", "server_cpus = \"4095\"")],
        "",
        &["m.toml:18:15: profiles[0].server_cpus", "not available"],
    ),
    row(
        "a reversed CPU range",
        &[("server_cpus = \"{cpu}\"", "server_cpus = \"1-0\"")],
        "",
        &["profiles[0].server_cpus"],
    ),
    // The file itself.
    row(
        "an unknown key",
        &[("duration_ms = 200", "duration_ms = 200\ndurration_ms = 5")],
        "",
        &["m.toml:5:", "durration_ms"],
    ),
    row(
        "a syntax error",
        &[("warmup_ms = 100", "warmup_ms = = 3")],
        "",
        &["m.toml:3:", "(syntax)"],
    ),
    row(
        "a string where a number belongs",
        &[("duration_ms = 200", "duration_ms = \"long\"")],
        "",
        &["m.toml:4:"],
    ),
    // Hosts and placements.
    row(
        "a host that starts with '-' and an unknown server host",
        &[],
        r#"
[[hosts]]
name = "gen"
host = "-oProxyCommand=evil"
work_dir = "/tmp/with space"

[[profiles]]
name = "split"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "nowhere"
loadgen_hosts = ["gen", "local"]
"#,
        &[
            "m.toml:23:8: hosts[0].host: \"-oProxyCommand=evil\" starts with '-'",
            "m.toml:24:12: hosts[0].work_dir:",
            "m.toml:30:15: profiles[1].server_host: unknown host \"nowhere\"",
        ],
    ),
    row(
        "every host field wrong, and fewer connections than generator hosts",
        &[("connections = [4]", "connections = [1]")],
        r#"
[[hosts]]
name = "local"
host = "-oProxyCommand=x"
port = 0
work_dir = "relative/dir"
ssh_options = ["-v"]
identity_file = "/nonexistent/key"
address = "not-an-ip"

[[profiles]]
name = "split"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "nowhere"
loadgen_hosts = ["local", "local"]
"#,
        &[
            "hosts[0].name: \"local\" is this machine's name",
            "hosts[0].host: \"-oProxyCommand=x\" starts with '-'",
            "hosts[0].port: must be 1..=65535",
            "hosts[0].work_dir: \"relative/dir\" must be an absolute path",
            "hosts[0].ssh_options: \"-v\" is not an ssh option",
            "hosts[0].identity_file: /nonexistent/key is not a readable file",
            "hosts[0].address: \"not-an-ip\" is not an IP address",
            "profiles[1].server_host: unknown host \"nowhere\" (defined: \"local\", local)",
            "profiles[1].loadgen_hosts: \"local\" is listed twice",
            "scenarios[0].load: level c1 has 1 connection(s), fewer than the 2 generator hosts",
        ],
    ),
    // A service's cost arguments, parsed as the services parse them; `args` carry no
    // position of their own, so the service's name (line 8, column 8) locates them.
    row(
        "negative --burn-iters",
        &[(
            BIN,
            "binary = \"/bin/true\"\nargs = [\"--burn-iters\", \"-1\"]",
        )],
        "",
        &[
            "m.toml:8:8: services[0].args",
            "-1 is not in 0..=1000000000",
        ],
    ),
    row(
        "absurd --burn-iters",
        &[(
            BIN,
            "binary = \"/bin/true\"\nargs = [\"--burn-iters=5000000000\"]",
        )],
        "",
        &[
            "m.toml:8:8: services[0].args",
            "5000000000 is not in 0..=1000000000",
        ],
    ),
    row(
        "--burn-iters not a number",
        &[(
            BIN,
            "binary = \"/bin/true\"\nargs = [\"--burn-iters\", \"lots\"]",
        )],
        "",
        &["m.toml:8:8: services[0].args", "invalid digit"],
    ),
    row(
        "--burn-ns with a unit",
        &[(
            BIN,
            "binary = \"/bin/true\"\nargs = [\"--burn-ns\", \"1ms\"]",
        )],
        "",
        &["m.toml:8:8: services[0].args", "invalid digit"],
    ),
    row(
        "--burn-iters without a value",
        &[(
            BIN,
            "binary = \"/bin/true\"\nargs = [\"--workers\", \"1\", \"--burn-iters\"]",
        )],
        "",
        &["m.toml:8:8: services[0].args", "--burn-iters needs a value"],
    ),
    // Issue 36, item 17: was planned, and its agent would have run the program with
    // --listen/--workers and the placeholders unexpanded.
    row(
        "a command service on a multi-host profile",
        &[(BIN, r#"command = ["srv", "--port", "{port}"]"#)],
        r#"
[[hosts]]
name = "srv"
host = "127.0.10.1"

[[profiles]]
name = "remote"
server_cpus = "0"
loadgen_cpus = "0"
server_host = "srv"
"#,
        &[
            "m.toml:9:11: services[0].command: a `command` service cannot run on multi-host profile \"remote\"",
        ],
    ),
];

/// `matrix plan --config <dir>/m.toml`, or `matrix run … --out <dir>/results`, on `text`.
fn matrix_on(subcommand: &str, d: &Path, text: &str) -> Output {
    let m = write_config(d, text);
    let out_dir = d.join("results");
    let mut args = vec![subcommand.as_ref(), "--config".as_ref(), m.as_os_str()];
    if subcommand == "run" {
        args.extend(["--out".as_ref(), out_dir.as_os_str()]);
    }
    run_matrix(args)
}

fn plan(test: &str, text: &str) -> Output {
    let d = Scratch::new(&format!("config-{test}"));
    let m = write_config(&d, text);
    run_matrix(["plan".as_ref(), "--config".as_ref(), m.as_os_str()])
}

/// Why `out` is not a refusal with every fragment of `r`, if it is not.
fn refusal_problem(r: &Rejected, out: &Output) -> Option<String> {
    let err = String::from_utf8_lossy(&out.stderr);
    let located = err.lines().filter(|l| l.contains("/m.toml:")).count();
    let missing: Vec<&&str> = r.want.iter().filter(|w| !err.contains(**w)).collect();
    if out.status.code() != Some(2) {
        Some(format!("exit {:?}, not 2", out.status.code()))
    } else if !missing.is_empty() {
        Some(format!("missing {missing:?}"))
    } else if r.errors.is_some_and(|n| n != located) {
        Some(format!("{located} error lines, not {}", r.errors.unwrap()))
    } else {
        None
    }
    .map(|why| format!("{}: {why}\nstderr:\n{err}", r.name))
}

#[test]
fn every_bad_file_is_refused_with_exit_2_in_plan_and_run_before_anything_runs() {
    let mut problems = Vec::new();
    for (i, r) in REJECTED.iter().enumerate() {
        let text = matrix_toml(r.edits, r.tail);
        for subcommand in ["plan", "run"] {
            let d = Scratch::new(&format!("config-rejected-{i}-{subcommand}"));
            let out = matrix_on(subcommand, &d, &text);
            problems.extend(refusal_problem(r, &out).map(|p| format!("matrix {subcommand}, {p}")));
            if d.join("results").exists() {
                problems.push(format!(
                    "matrix {subcommand}, {}: a run directory was made",
                    r.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_rejection_table_has_unique_names() {
    let mut names: Vec<&str> = REJECTED.iter().map(|r| r.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), REJECTED.len());
}

#[test]
fn the_base_matrix_is_valid() {
    let out = plan("base", &matrix_toml(&[], ""));
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("svc__ping__c4__pinned"));
}

#[test]
fn good_burn_arguments_plan() {
    let args = r#"binary = "/bin/true"
args = ["--burn-iters", "4", "--burn-ns=0"]"#;
    assert_success(&plan("burn-ok", &matrix_toml(&[(BIN, args)], "")));
}

#[test]
fn the_default_matrix_still_plans_within_its_budget() {
    // Its binaries are found next to `matrix`: built by `cargo build --workspace --bins`.
    bin("loadgen");
    let m = Path::new(env!("CARGO_MANIFEST_DIR")).join("../matrix.toml");
    let out = run_matrix(["plan".as_ref(), "--config".as_ref(), m.as_os_str()]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains(" cells, "));
}

#[test]
fn binaries_and_matrix_file_in_directories_with_spaces_run_end_to_end() {
    let d = Scratch::new("config-spaces");
    let bins = d.join("my bins");
    std::fs::create_dir_all(&bins).unwrap();
    for b in ["loadgen", "ping-tokio-hyper"] {
        std::os::unix::fs::symlink(bin(b), bins.join(format!("{b} copy"))).unwrap();
    }
    let here = d.join("a matrix dir");
    std::fs::create_dir_all(&here).unwrap();
    let text = matrix_toml(
        &[
            (
                "loadgen = \"/bin/true\"",
                "loadgen = \"../my bins/loadgen copy\"",
            ),
            (
                "binary = \"/bin/true\"",
                "binary = \"../my bins/ping-tokio-hyper copy\"",
            ),
        ],
        "",
    );
    let m = write_config(&here, &text);
    let out_dir = d.join("the results");
    let out = run_matrix([
        "run".as_ref(),
        "--config".as_ref(),
        m.as_os_str(),
        "--out".as_ref(),
        out_dir.as_os_str(),
    ]);
    assert_success(&out);
    let run_dir = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory");
    let cell: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("cells/svc__ping__c4__pinned.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(cell["status"], "ok", "{cell:#}");
}

#[test]
fn a_churn_scenario_plans_with_its_estimate() {
    let out = plan(
        "churn-ok",
        &matrix_toml(
            &[(
                LOAD,
                r#"load = { model = "churn", connections = [100], cycles = 3 }"#,
            )],
            "",
        ),
    );
    assert_success(&out);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains(" c100x3 "), "{s}");
    assert!(s.contains("ms churn"), "{s}");
}
