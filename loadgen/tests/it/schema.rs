//! `loadgen/schema.json` is generated from the report types (`loadgen::report::json_schema`),
//! and real reports from real runs deserialize into those types and serialize back to the
//! same JSON (so no field is lost, renamed or unknown).
//!
//! Regenerate the committed schema after changing a report type:
//! `LOADGEN_WRITE_SCHEMA=1 cargo test -p loadgen --test loadgen-it -- schema`

use std::process::Command;

use crate::support::{Mode, TestServer};
use loadgen::Report;
use serde_json::{Value, json};

const SCHEMA_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schema.json");

#[test]
fn committed_schema_is_the_generated_one() {
    let generated = loadgen::report::json_schema();
    if std::env::var_os("LOADGEN_WRITE_SCHEMA").is_some() {
        std::fs::write(SCHEMA_PATH, &generated).expect("write loadgen/schema.json");
    }
    let committed = std::fs::read_to_string(SCHEMA_PATH).expect("loadgen/schema.json exists");
    assert!(
        committed == generated,
        "loadgen/schema.json differs from the report types; regenerate it with \
         LOADGEN_WRITE_SCHEMA=1 cargo test -p loadgen --test loadgen-it -- schema"
    );
}

#[test]
fn schema_describes_every_report_field() {
    let schema: Value = serde_json::from_str(&loadgen::report::json_schema()).unwrap();
    let report = real_report(&["-c", "1", "-n", "20"]);
    let props = schema["properties"].as_object().expect("report properties");
    for key in report.as_object().unwrap().keys() {
        assert!(props.contains_key(key), "schema lacks `{key}`");
    }
    assert_eq!(schema["additionalProperties"], json!(false));
}

fn real_report(args: &[&str]) -> Value {
    let srv = TestServer::start(Mode::Ok);
    let out = Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .arg(srv.url())
        .args(args)
        .args(["--json", "-"])
        .output()
        .expect("run the loadgen binary");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is exactly one JSON report")
}

#[test]
fn closed_and_open_loop_reports_round_trip_through_the_types() {
    for args in [
        &["-c", "2", "-n", "300", "--pipeline", "4"][..],
        &["-c", "2", "-R", "400", "-d", "300ms", "--warmup", "100ms"][..],
    ] {
        let v = real_report(args);
        let r: Report = serde_json::from_value(v.clone()).expect("a real report deserializes");
        assert!(r.counts.ok > 0);
        assert_eq!(serde_json::to_value(&r).unwrap(), v, "{args:?}: round trip");
    }
}

#[test]
fn the_types_reject_broken_reports() {
    let good = real_report(&["-c", "1", "-n", "20"]);
    assert!(serde_json::from_value::<Report>(good.clone()).is_ok());
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("counts");
    let mut wrong_type = good.clone();
    wrong_type["latency_us"]["p99"] = json!("fast");
    let mut extra = good.clone();
    extra["generator"]["made_up"] = json!(1);
    let mut bad_model = good.clone();
    bad_model["spec"]["model"]["kind"] = json!("burst");
    let mut negative = good;
    negative["counts"]["ok"] = json!(-1);
    for (name, v) in [
        ("missing", missing),
        ("wrong_type", wrong_type),
        ("extra", extra),
        ("bad_model", bad_model),
        ("negative", negative),
    ] {
        assert!(
            serde_json::from_value::<Report>(v).is_err(),
            "{name} should not deserialize"
        );
    }
}

#[test]
fn report_hdr_blob_decodes_to_the_same_count() {
    use base64::Engine;
    let v = real_report(&["-c", "2", "-n", "500"]);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v["latency_hdr_v2_b64"].as_str().unwrap())
        .unwrap();
    let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .unwrap();
    assert_eq!(h.len(), 500);
    assert_eq!(
        h.value_at_quantile(0.99),
        v["latency_us"]["p99"].as_u64().unwrap()
    );
}
