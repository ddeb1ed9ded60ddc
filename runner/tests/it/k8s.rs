//! Kubernetes without a cluster: `matrix k8s render` of the default matrix validated offline
//! against Kubernetes' published schemas (`python3 -m kubernetes_validate --strict`, the
//! PyPI package .ci/run installs; skipped loudly where it is missing), the Guaranteed-QoS
//! and anti-affinity rules checked on the documents, and `matrix ingest` of loadgen reports
//! made on this machine against the rendered load spec.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::live;

use live::{Scratch, bin, out_text, read};
use runner::results::schema::ResultsFile;
use serde_json::Value;

/// Report files by name, as an ingest case writes them.
type Files = Vec<(String, Vec<u8>)>;

/// The schemas' Kubernetes version (one the package ships).
const K8S_VERSION: &str = "1.35.0";

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn json(p: &Path) -> Value {
    read(p)
}

#[test]
fn rendered_manifests_validate_and_keep_qos_and_anti_affinity() {
    let dir = Scratch::new("k8s-render");
    let out = dir.0.join("k8s");
    let o = Command::new(bin("matrix"))
        .args(["k8s", "render", "--config"])
        .arg(repo().join("matrix.toml"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    let cell = out.join("ping-epoll__json__c64__k8s-small");
    let pod = json(&cell.join("server-pod.json"));
    let c = &pod["spec"]["containers"][0];
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
    assert_eq!(c["resources"]["limits"]["cpu"], "200m");
    assert_eq!(c["resources"]["limits"]["memory"], "400Mi");
    let job = json(&cell.join("loadgen-job.json"));
    let t = &job["spec"]["template"]["spec"];
    let lc = &t["containers"][0]["resources"];
    assert_eq!(lc["requests"], lc["limits"]);
    let term =
        &t["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0];
    assert_eq!(term["topologyKey"], "kubernetes.io/hostname");
    for (k, v) in term["labelSelector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(
            &pod["metadata"]["labels"][k], v,
            "anti-affinity must select the server"
        );
    }
    // Churn cells are not rendered (the runner's own client).
    assert!(!out.join("ping-epoll__churn__c1000x8__pinned").exists());

    let files: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|e| {
            std::fs::read_dir(e.path())
                .unwrap()
                .flatten()
                .map(|f| f.path())
        })
        .collect();
    assert!(files.len() >= 4 * 60, "{} files", files.len());
    let probe = Command::new("python3")
        .args(["-c", "import kubernetes_validate"])
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!(
            "\n!!! SKIPPED schema validation of rendered manifests: python3 module \
             kubernetes_validate missing (pip install kubernetes-validate; .ci/run does) !!!\n"
        );
        return;
    }
    let o = Command::new("python3")
        .args([
            "-m",
            "kubernetes_validate",
            "--strict",
            "--quiet",
            "-k",
            K8S_VERSION,
        ])
        .args(&files)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
}

#[test]
fn ingest_turns_job_reports_into_a_result_set() {
    let dir = Scratch::new("k8s-ingest");
    let config = dir.0.join("m.toml");
    std::fs::write(
        &config,
        format!(
            r#"[defaults]
warmup_ms = 50
duration_ms = 200
repetitions = 2
loadgen = "{}"

[[services]]
name = "ping-epoll"
binary = "{}"

[[scenarios]]
name = "ping"
path = "/ping"
expect_body_bytes = 4
load = {{ model = "closed", connections = [2] }}

[[profiles]]
name = "pod"
server_cpus = "0"
loadgen_cpus = "0"
cpu_quota = 0.5
memory_max_mib = 64
"#,
            bin("loadgen").display(),
            bin("ping-epoll").display()
        ),
    )
    .unwrap();
    let manifests = dir.0.join("k8s");
    let o = Command::new(bin("matrix"))
        .args(["k8s", "render", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&manifests)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
    // What the Job's pods would log: loadgen run with the ConfigMap's spec, here against a
    // local ping-epoll instead of the Service.
    let key = "ping-epoll__ping__c2__pod";
    let cm = json(&manifests.join(key).join("load-configmap.json"));
    let mut spec: Value = serde_json::from_str(cm["data"]["spec.json"].as_str().unwrap()).unwrap();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(bin("ping-epoll"))
        .args(["--listen", &format!("127.0.0.1:{port}"), "--workers", "1"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let rendered_url = spec["url"].clone();
    spec["url"] = format!("http://127.0.0.1:{port}/ping").into();
    let spec_file = dir.0.join("spec.json");
    std::fs::write(&spec_file, spec.to_string()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "ping-epoll did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    let reports = dir.0.join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    for n in 1..=2 {
        let o = Command::new(bin("loadgen"))
            .arg("--spec")
            .arg(&spec_file)
            .args(["--json", "-"])
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c <= 1), "{}", out_text(&o));
        // The pod's report names the Service's URL, as the ConfigMap's spec does.
        let mut r: Value = serde_json::from_slice(&o.stdout).unwrap();
        r["spec"]["url"] = rendered_url.clone();
        std::fs::write(reports.join(format!("{key}.{n}.json")), r.to_string()).unwrap();
    }
    let _ = server.kill();
    let _ = server.wait();
    let out = dir.0.join("results");
    let ingest = |reports: &Path| {
        Command::new(bin("matrix"))
            .arg("ingest")
            .arg("--manifests")
            .arg(&manifests)
            .arg("--reports")
            .arg(reports)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    refuses_reports_that_are_not_this_cells(&reports, key, &ingest);
    let o = ingest(&reports);
    assert!(o.status.success(), "{}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("skipped") && err.contains("__c999__"), "{err}");
    let run = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let results: ResultsFile = read(&run.join("results.json"));
    assert_eq!(results.cells.len(), 1);
    let c = &results.cells[0];
    assert_eq!((c.key.as_str(), c.n), (key, 2));
    assert!(c.requests_per_s.as_ref().unwrap().mean > 0.0);
    assert!(
        c.server_cpu_us_per_request.is_none(),
        "not measured in the cluster"
    );
    assert!(run.join("results.md").exists());
}

/// Variants of the two good reports in `reports` (repetitions 1 and 2 of `key`), each in a
/// directory of its own, that ingest must refuse naming the file (and the field): a report
/// of another load filed under the cell, another duration, one report under two names for
/// one repetition, a copy under another repetition number, a repetition beyond the plan.
/// Finally leaves a report for a cell not in the plan beside the good ones (said, skipped).
fn refuses_reports_that_are_not_this_cells(
    reports: &Path,
    key: &str,
    ingest: &dyn Fn(&Path) -> std::process::Output,
) {
    let good = |n: u32| std::fs::read(reports.join(format!("{key}.{n}.json"))).unwrap();
    let edited = |n: u32, edit: &dyn Fn(&mut Value)| {
        let mut v: Value = serde_json::from_slice(&good(n)).unwrap();
        edit(&mut v);
        v.to_string().into_bytes()
    };
    let open = edited(2, &|v| {
        v["spec"]["model"] = serde_json::json!({
            "kind": "open", "rate_per_s": 5000.0, "connections": 2, "coalesce_us": 20
        })
    });
    let longer = edited(2, &|v| v["spec"]["duration_ms"] = 300.into());
    // (case, files written into the reports directory, what the refusal must say)
    let cases: Vec<(&str, Files, &str)> = vec![
        (
            "open-loop",
            vec![(format!("{key}.2.json"), open)],
            "model.kind is \"open\"",
        ),
        (
            "duration",
            vec![(format!("{key}.2.json"), longer)],
            "duration_ms is 300",
        ),
        (
            "two-names",
            vec![
                (format!("{key}.json"), good(1)),
                (format!("{key}.01.json"), edited(2, &|_| ())),
            ],
            "are both repetition 1",
        ),
        (
            "copy",
            vec![(format!("{key}.2.json"), good(1))],
            "is byte-identical to",
        ),
        (
            "beyond",
            vec![(format!("{key}.7.json"), edited(2, &|_| ()))],
            "repetition 7, but the plan has 2",
        ),
    ];
    for (name, files, want) in cases {
        let dir = reports.with_file_name(format!("reports-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{key}.1.json")), good(1)).unwrap();
        for (f, bytes) in &files {
            std::fs::write(dir.join(f), bytes).unwrap();
        }
        let o = ingest(&dir);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", out_text(&o));
        assert!(
            err.contains(&files[files.len() - 1].0) || err.contains(&files[0].0),
            "{name}: {err}"
        );
        assert!(err.contains(want), "{name}: {want:?} not in {err}");
    }
    std::fs::write(
        reports.join("ping-epoll__ping__c999__pod.1.json"),
        edited(2, &|v| v["spec"]["warmup_ms"] = 1.into()),
    )
    .unwrap();
}
