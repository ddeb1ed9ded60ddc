//! Kubernetes as an optional target: manifests per cell (`render`) and a result set from
//! the generator Jobs' reports (`ingest`). Nothing here talks to a cluster.
//!
//! Per cell: the server Pod with requests = limits (CPU from the profile's quota, else its
//! CPU count; memory from `memory_max_mib`, else a stated default) so its QoS class is
//! Guaranteed; a Service in front of it; the load spec in a ConfigMap; and a loadgen Job
//! (requests = limits too) kept off the server's node by pod anti-affinity. Documents are
//! written as JSON, which kubectl reads as YAML.

pub mod ingest;

use std::path::Path;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::results::schema::CellSpec;

/// The port the service listens on inside its Pod.
pub const PORT: u16 = 8080;
/// Memory request = limit when the profile sets none (Guaranteed QoS needs one).
pub const DEFAULT_MEMORY_MIB: u64 = 512;
/// The generator's memory request = limit.
pub const LOADGEN_MEMORY_MIB: u64 = 256;

/// Where the images come from: `<prefix><binary>:<tag>`.
#[derive(Debug, Clone)]
pub struct Images {
    pub prefix: String,
    pub tag: String,
}

impl Images {
    fn image(&self, binary: &str) -> String {
        format!("{}{binary}:{}", self.prefix, self.tag)
    }
}

/// A DNS-1123 name for the cell (keys hold '_' and '.'): "pm-" + 10 hex digits of its
/// sha256.
pub fn cell_name(key: &str) -> String {
    let h = format!("{:x}", Sha256::digest(key.as_bytes()));
    format!("pm-{}", &h[..10])
}

/// Kubernetes CPU quantity: 0.2 → "200m", 2 → "2".
fn cpu_quantity(cpus: f64) -> String {
    let milli = (cpus * 1000.0).round() as u64;
    if milli.is_multiple_of(1000) {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

fn labels(name: &str, role: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "pingmatrix",
        "pingmatrix/cell": name,
        "pingmatrix/role": role,
    })
}

fn resources(cpu: &str, memory_mib: u64) -> Value {
    let r = json!({ "cpu": cpu, "memory": format!("{memory_mib}Mi") });
    json!({ "requests": r.clone(), "limits": r })
}

/// The load spec a cell's generator Job runs (its ConfigMap's `spec.json`), against the
/// cell's Service: what every report ingested for the cell must carry.
pub fn job_spec(cell: &CellSpec) -> loadgen::LoadSpec {
    let mut spec = cell.load_spec(PORT);
    spec.url = format!(
        "{}://{}:{PORT}{}",
        cell.protocol.scheme(),
        cell_name(&cell.key),
        cell.path
    );
    spec
}

/// The four documents of one cell: (file name, document).
pub fn manifests(cell: &CellSpec, binary: &str, images: &Images) -> Vec<(String, Value)> {
    let name = cell_name(&cell.key);
    let l = &cell.limits;
    let annotations = json!({ "pingmatrix/cell-key": cell.key });
    let server_cpu = cpu_quantity(l.cpu_quota.unwrap_or(l.server_cpus.len().max(1) as f64));
    let memory = l
        .memory_max_bytes
        .map_or(DEFAULT_MEMORY_MIB, |b| b.div_ceil(1024 * 1024));
    let mut args = vec![
        "--listen".to_string(),
        format!("0.0.0.0:{PORT}"),
        "--workers".into(),
        l.workers.to_string(),
    ];
    args.extend(cell.service_args.iter().cloned());
    let server = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("{name}-server"),
            "labels": labels(&name, "server"),
            "annotations": annotations,
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [{
                "name": "server",
                "image": images.image(binary),
                "args": args,
                "ports": [{ "name": "http", "containerPort": PORT }],
                "resources": resources(&server_cpu, memory),
                "readinessProbe": {
                    "httpGet": { "path": "/ping", "port": PORT },
                    "periodSeconds": 1,
                },
            }],
        },
    });
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name, "labels": labels(&name, "server"), "annotations": annotations },
        "spec": {
            "selector": { "pingmatrix/cell": name, "pingmatrix/role": "server" },
            "ports": [{ "name": "http", "port": PORT, "targetPort": PORT }],
        },
    });
    let spec = job_spec(cell);
    let config = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": format!("{name}-load"), "labels": labels(&name, "loadgen"), "annotations": annotations },
        "data": { "spec.json": serde_json::to_string_pretty(&spec).unwrap_or_default() },
    });
    let loadgen_cpu = cpu_quantity(l.loadgen_cpus.len().max(1) as f64);
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": format!("{name}-loadgen"), "labels": labels(&name, "loadgen"), "annotations": annotations },
        "spec": {
            "backoffLimit": 0,
            "completions": cell.repetitions,
            "parallelism": 1,
            "template": {
                "metadata": { "labels": labels(&name, "loadgen"), "annotations": annotations },
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [{
                                "labelSelector": {
                                    "matchLabels": { "pingmatrix/cell": name, "pingmatrix/role": "server" },
                                },
                                "topologyKey": "kubernetes.io/hostname",
                            }],
                        },
                    },
                    "containers": [{
                        "name": "loadgen",
                        "image": images.image("loadgen"),
                        "args": ["--spec", "/spec/spec.json", "--json", "-"],
                        "volumeMounts": [{ "name": "spec", "mountPath": "/spec", "readOnly": true }],
                        "resources": resources(&loadgen_cpu, LOADGEN_MEMORY_MIB),
                    }],
                    "volumes": [{ "name": "spec", "configMap": { "name": format!("{name}-load") } }],
                },
            },
        },
    });
    vec![
        ("server-pod.json".into(), server),
        ("service.json".into(), service),
        ("load-configmap.json".into(), config),
        ("loadgen-job.json".into(), job),
    ]
}

/// How to use a rendered directory (written beside the manifests).
pub const HOW_TO: &str = "\
Per cell directory (<cell key>/): apply server-pod.json, service.json and
load-configmap.json; wait for the Pod to be Ready (kubectl wait --for=condition=Ready
pod/<name>-server); apply loadgen-job.json (one completion per repetition); save each
completed Job pod's log (loadgen's JSON report) as <reports>/<cell key>.<n>.json; then
`matrix ingest --manifests <this dir> --reports <reports> --out results`.
plan.json is the expanded plan ingest reads; matrix.toml the matrix it came from.
";

/// Writes every cell's manifests under `out/<key>/`, plus plan.json and matrix.toml.
/// Returns (cells written, cells skipped with why).
pub fn render(
    m: &crate::config::Matrix,
    cells: &[&CellSpec],
    images: &Images,
    out: &Path,
) -> anyhow::Result<(usize, Vec<String>)> {
    std::fs::create_dir_all(out)?;
    let mut written = Vec::new();
    let mut skipped = Vec::new();
    for c in cells {
        if c.churn.is_some() {
            skipped.push(format!(
                "{}: churn cells run the runner's own client",
                c.key
            ));
            continue;
        }
        if c.protocol.tls() {
            // The test certificate is made where the runner runs; a pod has none to serve.
            skipped.push(format!(
                "{}: TLS cells need the run's test certificate, which no pod is given yet",
                c.key
            ));
            continue;
        }
        let binary = m
            .services
            .iter()
            .find(|s| s.name == c.service)
            .and_then(|s| s.binary.file_name())
            .map_or(c.service.clone(), |f| f.to_string_lossy().to_string());
        let dir = out.join(&c.key);
        std::fs::create_dir_all(&dir)?;
        for (file, doc) in manifests(c, &binary, images) {
            let mut text = serde_json::to_string_pretty(&doc)?;
            text.push('\n');
            std::fs::write(dir.join(file), text)?;
        }
        written.push((*c).clone());
    }
    std::fs::write(
        out.join("plan.json"),
        serde_json::to_string_pretty(&written)? + "\n",
    )?;
    std::fs::write(out.join("matrix.toml"), &m.text)?;
    std::fs::write(out.join("HOW-TO.txt"), HOW_TO)?;
    Ok((written.len(), skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_and_names() {
        assert_eq!(cpu_quantity(0.2), "200m");
        assert_eq!(cpu_quantity(2.0), "2");
        assert_eq!(cpu_quantity(1.5), "1500m");
        let n = cell_name("ping-epoll__ping__c64__k8s-small");
        assert!(n.len() == 13 && n.starts_with("pm-"), "{n}");
    }
}
