//! What the tests that start the real binaries share: finding them in the target directory,
//! a scratch directory removed on drop, reading JSON results and showing a command's output.

#![allow(dead_code)] // each test binary uses a different part

use std::ops::Deref;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use runner::limits::cpus::allowed_cpus;

/// `<target>/debug`, where Cargo put `matrix` for this test crate and
/// `cargo build --workspace --bins` the other binaries.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_matrix"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A workspace binary by name: the tests' one way to find `matrix`, loadgen, the services
/// and the responder.
pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} not found: run `cargo build --workspace --bins` first",
        p.display()
    );
    p
}

/// A fresh scratch directory, unique in this process (tests run in parallel threads),
/// removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "pingmatrix-e2e-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `<dir>/<name>`: an executable shell script running `body`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

pub fn read<T: serde::de::DeserializeOwned>(p: &Path) -> T {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

pub fn out_text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A tiny matrix on ~250 ms windows: closed loop at 4 connections (`ping`) and open loop at
/// 300/s (`open`), one `pinned` profile (server on the first allowed CPU, generator on the
/// last). `services` are (name, binary, TOML args list body); `defaults` lines go into
/// `[defaults]`, `tail` after the profile. The syscall window and the drift points are off
/// unless `defaults` sets them.
pub fn tiny_matrix(
    services: &[(&str, PathBuf, &str)],
    reps: u32,
    defaults: &str,
    tail: &str,
) -> String {
    let cpus = allowed_cpus();
    let (s, l) = (cpus[0], *cpus.last().unwrap());
    // The exact syscall count adds ~3 s to every repetition: on only where a test asks.
    let count = if defaults.contains("count_syscalls") {
        ""
    } else {
        "count_syscalls = false"
    };
    // Each drift point re-runs the reference cell (four by default): on only where asked.
    let drift = if defaults.contains("drift_points") {
        ""
    } else {
        "drift_points = 0"
    };
    // A test may give its own (a Python server starts slower than 1.5 s on a loaded machine).
    let startup = if defaults.contains("startup_timeout_ms") {
        ""
    } else {
        "startup_timeout_ms = 1500"
    };
    let mut t = format!(
        r#"[defaults]
warmup_ms = 100
duration_ms = 250
repetitions = {reps}
cooldown_ms = 0
{startup}
stop_grace_ms = 1000
loadgen = "{}"
{count}
{drift}
{defaults}
"#,
        bin("loadgen").display()
    );
    for (name, path, args) in services {
        t += &format!(
            "\n[[services]]\nname = \"{name}\"\nbinary = \"{}\"\nargs = [{args}]\n",
            path.display()
        );
    }
    t += &format!(
        r#"
[[scenarios]]
name = "ping"
path = "/ping"
expect_body_bytes = 4
load = {{ model = "closed", connections = [4] }}

[[scenarios]]
name = "open"
path = "/json"
load = {{ model = "open", rates_per_s = [300], max_connections = 4 }}

[[profiles]]
name = "pinned"
server_cpus = "{s}"
loadgen_cpus = "{l}"
{tail}"#
    );
    t
}

/// `<dir>/m.toml` with `text` in it.
pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let m = dir.join("m.toml");
    std::fs::write(&m, text).unwrap();
    m
}

/// `matrix <args…> --config CONFIG --out OUT`, stdin closed; `args` starts with the
/// subcommand. The variants it builds build as a user's would: without the lints that
/// scripts/test.sh puts in this checkout's own build (clippy's driver as the workspace's
/// compiler wrapper).
pub fn matrix_at(config: &Path, out: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin("matrix"));
    c.args(args)
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .stdin(Stdio::null());
    c
}

/// The one run directory `matrix run --out out` made.
pub fn only_run_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "expected one run dir in {}", out.display());
    dirs[0].clone()
}
