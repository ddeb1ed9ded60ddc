//! The one support kit of runner's integration tests: `live` for the tests that start the
//! real binaries (finding them, scratch directories, tiny matrix files), `fixtures` for the
//! synthetic result sets of the compare, report and regenerate tests.
//!
//! The tests run in parallel threads of one binary, load tests beside each other: none
//! asserts what a busy machine changes (timeouts allow for it, counts are exact, verdicts and
//! drift are authored with `--fake-reps OUTCOMES.toml`), so no test takes the machine alone.

pub mod fixtures;
pub mod live;

/// The source of `name` at the version this workspace's Cargo.lock has, from cargo's
/// registry cache (`$CARGO_HOME/registry/src/<index>/<name>-<version>`): there after any
/// build of the workspace, no network needed.
pub fn registry_crate(name: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let lock: toml::Table =
        toml::from_str(&std::fs::read_to_string(root.join("Cargo.lock")).unwrap()).unwrap();
    let version = lock["package"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str() == Some(name))
        .and_then(|p| p["version"].as_str())
        .unwrap_or_else(|| panic!("{name} is not in Cargo.lock"))
        .to_string();
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo")
        });
    let src = home.join("registry").join("src");
    std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .flatten()
        .map(|index| index.path().join(format!("{name}-{version}")))
        .find(|p| p.join("Cargo.toml").is_file())
        .unwrap_or_else(|| panic!("{name}-{version} is not in {}", src.display()))
}
