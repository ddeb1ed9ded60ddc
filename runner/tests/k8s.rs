//! Kubernetes without a cluster: `matrix k8s render` of the default matrix validated offline
//! against Kubernetes' published schemas (`python3 -m kubernetes_validate --strict`, the
//! PyPI package .ci/run installs; skipped loudly where it is missing), the Guaranteed-QoS
//! and anti-affinity rules checked on the documents, and `matrix ingest` of loadgen reports
//! made on this machine against the rendered load spec.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod live;

use live::{Scratch, bin, out_text, read};
use runner::results::schema::ResultsFile;
use serde_json::Value;

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
        std::fs::write(reports.join(format!("{key}.{n}.json")), &o.stdout).unwrap();
    }
    let _ = server.kill();
    let _ = server.wait();
    let out = dir.0.join("results");
    let o = Command::new(bin("matrix"))
        .arg("ingest")
        .arg("--manifests")
        .arg(&manifests)
        .arg("--reports")
        .arg(&reports)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", out_text(&o));
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
