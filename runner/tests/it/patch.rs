//! Dependency sources in variants, offline and end to end: httparse copied from cargo's
//! registry cache into a git repository, committed twice — the second commit adds a known
//! cost (200 `black_box` iterations) to `Request::parse`, which ping-epoll calls for every
//! request — and ping-epoll built at each commit as a variant (`patch = { httparse = { git =
//! "file://…", rev = … } }`), counted under Valgrind at c1: head costs more instructions per
//! request than base, and run.json and results.md name the source and both commits.

use crate::support;
use crate::support::live::*;

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=pingmatrix test",
            "-c",
            "user.email=test@pingmatrix.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A git repository of the registry's httparse: (its directory, base commit, head commit).
fn httparse_repo(dir: &Path) -> (PathBuf, String, String) {
    let repo = dir.join("httparse");
    let st = Command::new("cp")
        .arg("-R")
        .arg(support::registry_crate("httparse"))
        .arg(&repo)
        .status()
        .unwrap();
    assert!(st.success());
    git(&repo, &["init", "--quiet"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    let lib = repo.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib).unwrap();
    let parse = "    pub fn parse(&mut self, buf: &'b [u8]) -> Result<usize> {\n";
    // The first `parse(&mut self, buf)` is Request's (Response's comes after it).
    let at = text.find(parse).expect("Request::parse in httparse") + parse.len();
    let cost = "        for i in 0..200u32 {\n            core::hint::black_box(i);\n        }\n";
    std::fs::write(&lib, format!("{}{cost}{}", &text[..at], &text[at..])).unwrap();
    git(
        &repo,
        &[
            "commit",
            "--quiet",
            "-am",
            "head: a known cost in Request::parse",
        ],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    (repo, base, head)
}

#[test]
fn a_dependency_patched_from_two_git_revisions_is_counted_apart() {
    // Instructions under Valgrind are counted, not timed: the load tests beside it change
    // nothing asserted here; its builds take one job each so as not to crowd them.
    let scratch = Scratch::new("patch");
    let (repo, base, head) = httparse_repo(&scratch.0);
    let url = format!("file://{}", repo.display());
    let variants = format!(
        "[[services.variants]]\nname = \"base\"\npatch = {{ httparse = {{ git = {url:?}, rev = {:?} }} }}\n\
         [[services.variants]]\nname = \"head\"\npatch = {{ httparse = {{ git = {url:?}, rev = \"master\" }} }}\n\
         [[services.variants]]\nname = \"base-as-path\"\npatch = {{ httparse = {{ git = {:?}, rev = {:?} }} }}\n",
        &base[..10],
        repo.display().to_string(),
        base,
    );
    // The default branch's name depends on git's configuration: name it.
    git(&repo, &["branch", "-M", "master"]);
    let text = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "")
        .replace("connections = [4]", "connections = [1]")
        .replacen(
            "\n[[scenarios]]",
            &format!("\n{variants}\n[[scenarios]]"),
            1,
        );
    // Inside this checkout: variants are built from its history.
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patch-httparse");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let m = write_config(&d, &text);
    let out_dir = d.join("out");
    let out = matrix_at(
        &m,
        &out_dir,
        &[
            "run",
            "--quiet",
            "--only",
            "scenario=ping",
            "--only",
            "service=ping-epoll@base,ping-epoll@head,ping-epoll@base-as-path",
            "--count-instructions",
        ],
    )
    .env("PINGMATRIX_VARIANTS_DIR", scratch.0.join("variants"))
    // Cargo reads these for the variants' builds: one job, and a quick optimiser — no
    // link-time optimisation, opt-level 1, many codegen units (the difference counted is a
    // loop of `black_box` calls, which no optimiser removes): half the build time.
    .env("CARGO_BUILD_JOBS", "1")
    .env("CARGO_PROFILE_RELEASE_LTO", "off")
    .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1")
    .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let run = only_run_dir(&out_dir);

    let per_request = |service: &str| {
        let c: serde_json::Value = read(
            &run.join("cells")
                .join(format!("{service}__ping__c1__pinned.json")),
        );
        assert_eq!(c["status"], "ok", "{c}");
        c["reps"][0]["instructions"]["per_request"]
            .as_f64()
            .unwrap_or_else(|| panic!("{service}: no instruction count: {c}"))
    };
    let (b, h) = (
        per_request("ping-epoll@base"),
        per_request("ping-epoll@head"),
    );
    eprintln!("instructions/request: base {b:.1}, head {h:.1}");
    // 200 iterations of a counted loop are several hundred instructions per request.
    assert!(h > b + 200.0, "base {b}, head {h}");

    let rec: serde_json::Value = read(&run.join("run.json"));
    let vs = rec["environment"]["variants"].as_array().unwrap();
    for (name, rev, commit) in [("base", &base[..10], &base), ("head", "master", &head)] {
        let v = vs
            .iter()
            .find(|v| v["variant"] == name)
            .unwrap_or_else(|| panic!("no {name} in {vs:?}"));
        let p = &v["patches"]["httparse"];
        assert_eq!(p["source"], "git", "{v}");
        assert_eq!(p["git"].as_str(), Some(url.as_str()), "{v}");
        assert_eq!(p["rev"].as_str(), Some(rev), "{v}");
        assert_eq!(p["commit"].as_str(), Some(commit.as_str()), "{v}");
        assert!(v["resolved"]["httparse"].is_array(), "{v}");
        assert_eq!(v["source_repo"], "the matrix file's checkout", "{v}");
        assert_eq!(v["cargo_lock_sha256"].as_str().map(str::len), Some(64));
    }
    assert_ne!(
        vs[0]["cache_key"], vs[1]["cache_key"],
        "the source's commit is in the cache key"
    );
    // F10: the same commit spelled `/x` instead of `file:///x` (and by its full hash) is
    // the same build, made once in this run.
    let as_path = vs.iter().find(|v| v["variant"] == "base-as-path").unwrap();
    assert_eq!(as_path["cache_key"], vs[0]["cache_key"], "{vs:?}");
    assert_eq!(as_path["cached"], true, "{as_path}");
    assert_eq!(as_path["binary_sha256"], vs[0]["binary_sha256"]);
    assert_eq!(
        std::fs::read_dir(scratch.0.join("variants"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name() != "git")
            .count(),
        2,
        "two builds for three variants"
    );
    let md = std::fs::read_to_string(run.join("results.md")).unwrap();
    assert!(
        md.contains(&format!(
            "- ping-epoll@head: httparse from git `{url}` @ `master` → `{}`",
            &head[..12]
        )),
        "{md}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// A path source whose version does not meet the tree's requirement (`httparse = "1.10"`)
/// would be left unused by cargo — the variant would silently build the registry's crate.
/// It is refused with the entry's location, exit 2, before anything builds.
#[test]
fn a_patch_cargo_would_not_use_is_refused_before_anything_builds() {
    let scratch = Scratch::new("patch-unused");
    let src = scratch.0.join("httparse");
    let st = Command::new("cp")
        .arg("-R")
        .arg(support::registry_crate("httparse"))
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let manifest = src.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let bumped = text.replacen("\nversion = \"1.", "\nversion = \"2.", 1);
    assert_ne!(text, bumped);
    std::fs::write(&manifest, bumped).unwrap();
    let variant = format!(
        "[[services.variants]]\nname = \"v2\"\npatch = {{ httparse = {{ path = {:?} }} }}\n",
        src.display().to_string()
    );
    let text = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "").replacen(
        "\n[[scenarios]]",
        &format!("\n{variant}\n[[scenarios]]"),
        1,
    );
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patch-unused");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let m = write_config(&d, &text);
    let out_dir = d.join("out");
    let variants = scratch.0.join("variants");
    let out = matrix_at(&m, &out_dir, &["run", "--quiet"])
        .env("PINGMATRIX_VARIANTS_DIR", &variants)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        err.contains("m.toml:") && err.contains("did not use the patch of httparse"),
        "{err}"
    );
    assert!(!out_dir.exists());
    let built = std::fs::read_dir(&variants)
        .unwrap()
        .flatten()
        .any(|e| e.path().join("build").exists());
    assert!(!built, "a build directory was made");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A `git` source that git would take as an option (`--upload-pack=<cmd>`, which runs the
/// command when `git fetch` is given it) is refused with the entry's location, exit 2, before
/// anything runs: the command never runs.
#[test]
fn a_git_url_that_is_an_option_is_refused_and_never_runs() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("patch-option-url");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let marker = d.join("ran");
    let url = format!("--upload-pack=touch {} #://x", marker.display());
    let variant = format!(
        "[[services.variants]]\nname = \"evil\"\npatch = {{ httparse = {{ git = {url:?}, rev = \"master\" }} }}\n"
    );
    let text = tiny_matrix(&[("ping-epoll", bin("ping-epoll"), "")], 1, "", "").replacen(
        "\n[[scenarios]]",
        &format!("\n{variant}\n[[scenarios]]"),
        1,
    );
    let m = write_config(&d, &text);
    let out_dir = d.join("out");
    let out = matrix_at(&m, &out_dir, &["run", "--quiet"])
        .env("PINGMATRIX_VARIANTS_DIR", d.join("variants"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", out_text(&out));
    assert!(
        err.contains("m.toml:") && err.contains("git would take as an option"),
        "{err}"
    );
    assert!(!marker.exists(), "the URL's command ran");
    assert!(!out_dir.exists());
    std::fs::remove_dir_all(&d).unwrap();
}
