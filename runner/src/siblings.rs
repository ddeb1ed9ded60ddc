//! The one-command quick start: `cargo run --release -- run --quick` on a fresh clone. When
//! cargo starts a release `matrix run`, the sibling binaries the matrix file names by bare
//! name (loadgen, the services, the start-up floor's responder) may be missing or stale, so
//! the run first has the cargo that started it build those of them that are binaries of
//! this workspace, with cargo's own progress on stderr. Cargo decides what is stale; a fresh
//! binary costs it a check. Started any other way — `target/release/matrix` itself, or the
//! tests' debug build — nothing is built and nothing changes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

/// The binaries a run needs besides those its matrix file names.
const ALWAYS: [&str; 2] = ["loadgen", crate::floor::RESPONDER];

/// The cargo that started this `matrix` and the workspace it ran from: only under
/// `cargo run` (which sets `CARGO` and `CARGO_MANIFEST_DIR`) of a release build, whose
/// siblings are release builds too (tests run the debug build and build nothing).
fn launching_cargo() -> Option<(PathBuf, PathBuf)> {
    let cargo = std::env::var_os("CARGO")?;
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let exe_dir = crate::binaries::exe_dir()?;
    (exe_dir.file_name()? == "release").then(|| {
        (
            PathBuf::from(cargo),
            Path::new(&manifest_dir).join("Cargo.toml"),
        )
    })
}

/// The binaries a matrix file names by bare name (`loadgen`, every `binary`), in the order
/// written, once each. A name with a '/' is a path: not ours to build.
pub fn named_binaries(matrix_toml: &str) -> Vec<String> {
    fn walk(v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, v) in t {
                    match v {
                        toml::Value::String(s) if k == "binary" || k == "loadgen" => {
                            out.push(s.clone());
                        }
                        _ => walk(v, out),
                    }
                }
            }
            toml::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut names: Vec<String> = ALWAYS.iter().map(|s| s.to_string()).collect();
    if let Ok(doc) = matrix_toml.parse::<toml::Table>() {
        walk(&toml::Value::Table(doc), &mut names);
    }
    let mut seen = BTreeSet::new();
    names
        .into_iter()
        .filter(|n| !n.is_empty() && !n.contains('/') && seen.insert(n.clone()))
        .collect()
}

/// The bin targets of the workspace's own packages, from
/// `cargo metadata --no-deps --format-version 1`.
pub fn workspace_bins(metadata_json: &[u8]) -> anyhow::Result<BTreeSet<String>> {
    let v: serde_json::Value = serde_json::from_slice(metadata_json).context("cargo metadata")?;
    let packages = v["packages"]
        .as_array()
        .context("cargo metadata: no packages")?;
    Ok(packages
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect())
}

/// Which of the `named` binaries cargo builds: those that are workspace binaries (others —
/// a system `python3`, a binary on PATH — are found as before, or refused by the config).
pub fn to_build(named: &[String], workspace: &BTreeSet<String>) -> Vec<String> {
    named
        .iter()
        .filter(|n| workspace.contains(*n))
        .cloned()
        .collect()
}

/// Under `cargo run --release`: build the workspace binaries the matrix file at `config`
/// needs before it is read (its check refuses missing binaries). Otherwise a no-op.
pub fn build_for(config: &Path, quiet: bool) -> anyhow::Result<()> {
    let Some((cargo, manifest)) = launching_cargo() else {
        return Ok(());
    };
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let metadata = Command::new(&cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(&manifest)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run cargo ({})", cargo.display()))?;
    if !metadata.status.success() {
        bail!("cargo metadata failed ({})", metadata.status);
    }
    let bins = to_build(&named_binaries(&text), &workspace_bins(&metadata.stdout)?);
    if bins.is_empty() {
        return Ok(());
    }
    let mut build = Command::new(&cargo);
    build
        .args([
            "build",
            "--release",
            "--locked",
            "--workspace",
            "--manifest-path",
        ])
        .arg(&manifest);
    for b in &bins {
        build.args(["--bin", b]);
    }
    if quiet {
        build.arg("--quiet");
    } else {
        eprintln!(
            "matrix: building what the run needs (cargo build --release): {}",
            bins.join(", ")
        );
    }
    let status = build
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("cannot run cargo ({})", cargo.display()))?;
    if !status.success() {
        bail!(
            "cargo build --release of {} failed ({status})",
            bins.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_names_are_built_and_paths_are_not() {
        let text = r#"
[defaults]
loadgen = "loadgen"

[[services]]
name = "a"
binary = "ping-tokio-hyper"

[[services]]
name = "b"
binary = "./bin/my-server"

[[services]]
name = "c"
binary = "ping-tokio-hyper"

[[services]]
name = "d"
command = ["python3", "serve.py"]

[[services]]
name = "e"
binary = "python3"
"#;
        assert_eq!(
            named_binaries(text),
            [
                "loadgen",
                "pingmatrix-responder",
                "ping-tokio-hyper",
                "python3"
            ]
        );
        let workspace: BTreeSet<String> = [
            "loadgen",
            "matrix",
            "pingmatrix-responder",
            "ping-tokio-hyper",
        ]
        .map(String::from)
        .into();
        assert_eq!(
            to_build(&named_binaries(text), &workspace),
            ["loadgen", "pingmatrix-responder", "ping-tokio-hyper"],
            "python3 is not ours; the path is not built"
        );
    }

    #[test]
    fn an_unreadable_matrix_file_still_builds_the_harness() {
        // The config check reports the file's problem after the build.
        assert_eq!(
            named_binaries("[[services"),
            ["loadgen", "pingmatrix-responder"]
        );
    }

    #[test]
    fn workspace_bins_are_the_bin_targets_of_cargo_metadata() {
        let json = br#"{"packages": [
            {"name": "runner", "targets": [
                {"name": "runner", "kind": ["lib"]},
                {"name": "matrix", "kind": ["bin"]},
                {"name": "it", "kind": ["test"]}]},
            {"name": "loadgen", "targets": [{"name": "loadgen", "kind": ["bin"]}]}
        ]}"#;
        let bins: Vec<String> = workspace_bins(json).unwrap().into_iter().collect();
        assert_eq!(bins, ["loadgen", "matrix"]);
        assert!(workspace_bins(b"not json").is_err());
    }
}
