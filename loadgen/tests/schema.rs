//! The JSON report validates against `loadgen/schema.json`, and the validator used here does
//! reject broken reports (so this test can fail). The validator is a small structural
//! checker for the keywords the schema uses: type, const, enum, minimum, required,
//! properties, additionalProperties, items, oneOf and local `$ref`.

mod common;

use std::process::Command;

use common::{Mode, TestServer};
use serde_json::{Value, json};

fn schema() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema.json"))
        .expect("loadgen/schema.json exists");
    serde_json::from_str(&text).expect("schema.json is JSON")
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64(),
        other => panic!("schema uses unknown type {other}"),
    }
}

/// Validate `v` at `path` against `s`; push every violation into `errs`.
fn check(root: &Value, s: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("only local $defs refs");
        let target = &root["$defs"][name];
        assert!(!target.is_null(), "dangling $ref {r}");
        check(root, target, v, path, errs);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)),
            _ => panic!("bad type keyword"),
        };
        if !ok {
            errs.push(format!("{path}: expected type {t}, got {v}"));
            return;
        }
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        errs.push(format!("{path}: expected {c}, got {v}"));
    }
    if let Some(min) = s.get("minimum").and_then(Value::as_f64)
        && let Some(x) = v.as_f64()
        && x < min
    {
        errs.push(format!("{path}: {x} < minimum {min}"));
    }
    if let Some(alts) = s.get("oneOf").and_then(Value::as_array) {
        let passing = alts
            .iter()
            .filter(|a| {
                let mut e = Vec::new();
                check(root, a, v, path, &mut e);
                e.is_empty()
            })
            .count();
        if passing != 1 {
            errs.push(format!(
                "{path}: matches {passing} of the oneOf alternatives"
            ));
        }
    }
    if let Some(obj) = v.as_object() {
        for req in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = req.as_str().unwrap();
            if !obj.contains_key(key) {
                errs.push(format!("{path}: missing required `{key}`"));
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            let sub = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(ps) => check(root, ps, val, &sub, errs),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => errs.push(format!("{sub}: not in the schema")),
                    Some(extra @ Value::Object(_)) => check(root, extra, val, &sub, errs),
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            check(root, items, x, &format!("{path}[{i}]"), errs);
        }
    }
}

fn validate(v: &Value) -> Vec<String> {
    let root = schema();
    let mut errs = Vec::new();
    check(&root, &root, v, "$", &mut errs);
    errs
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
fn closed_and_open_loop_reports_validate() {
    for args in [
        &["-c", "2", "-n", "300", "--pipeline", "4"][..],
        &["-c", "2", "-R", "400", "-d", "300ms", "--warmup", "100ms"][..],
    ] {
        let v = real_report(args);
        let errs = validate(&v);
        assert!(errs.is_empty(), "{args:?}: {errs:#?}");
        // And it round-trips into the Rust type the runner uses.
        let r: loadgen::Report = serde_json::from_value(v).unwrap();
        assert!(r.counts.ok > 0);
    }
}

#[test]
fn validator_rejects_broken_reports() {
    let good = real_report(&["-c", "1", "-n", "20"]);
    assert!(validate(&good).is_empty());
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
        assert!(!validate(&v).is_empty(), "{name} should fail validation");
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
