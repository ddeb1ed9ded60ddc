//! `loadgen --floor`: versioned JSON the runner can record, bad input exits 2, and the
//! committed `floor-schema.json` is the one generated from the types.

use crate::support::loadgen;

use loadgen::floor::Floor;

#[test]
fn floor_json_has_every_measurement() {
    let out = loadgen(&[
        "--floor",
        "--floor-rates",
        "1000,5000",
        "--floor-duration",
        "100ms",
        "--json",
        "-",
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let f: Floor = serde_json::from_slice(&out.stdout).expect("stdout is one Floor JSON");
    assert_eq!(f.schema_version, loadgen::floor::FLOOR_SCHEMA_VERSION);
    assert_eq!(f.duration_ms, 100);
    let rates: Vec<f64> = f.timer.iter().map(|t| t.rate_per_s).collect();
    assert_eq!(rates, [1000.0, 5000.0]);
    for t in &f.timer {
        assert!(t.lateness.is_some() != t.unsupported.is_some(), "{t:?}");
        // A wake-up costs some CPU, and far less than the time between wake-ups.
        let cost = t.cpu_per_wakeup_us.expect("measured with the lateness");
        assert!(cost > 0.0 && cost < 1e6 / t.rate_per_s, "{t:?}");
    }
    let e = &f.loopback_echo;
    assert!(e.round_trip.is_some() != e.unsupported.is_some(), "{e:?}");
}

#[test]
fn floor_text_by_default() {
    let out = loadgen(&[
        "--floor",
        "--floor-rates",
        "2000",
        "--floor-duration",
        "50ms",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("timer lateness at") && text.contains("loopback echo"),
        "{text}"
    );
}

#[test]
fn bad_floor_arguments_exit_2() {
    for (args, needle) in [
        (&["--floor", "--floor-rates", "0"][..], "rate"),
        (&["--floor", "--floor-rates", "fast"][..], "floor-rates"),
        (&["--floor", "--floor-duration", "1h"][..], "floor-duration"),
        (
            &["--floor", "http://127.0.0.1:1/"][..],
            "cannot be used with",
        ),
        (&["--floor", "-c", "4"][..], "cannot be used with"),
        (
            &["http://127.0.0.1:1/", "--floor-rates", "5"][..],
            "--floor",
        ),
    ] {
        let out = loadgen(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn committed_floor_schema_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/floor-schema.json");
    let generated = loadgen::floor::json_schema();
    if std::env::var_os("LOADGEN_WRITE_SCHEMA").is_some() {
        std::fs::write(path, &generated).expect("write loadgen/floor-schema.json");
    }
    let committed = std::fs::read_to_string(path).expect("loadgen/floor-schema.json exists");
    assert!(
        committed == generated,
        "loadgen/floor-schema.json differs from the types; regenerate it with \
         LOADGEN_WRITE_SCHEMA=1 cargo test -p loadgen --test loadgen-it -- floor"
    );
}
