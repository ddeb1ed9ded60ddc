//! Whether the two runs' load generators measured the same way. Runs are matched on
//! loadgen's method identity (`loadgen::identity`: its version, a hash of its source and
//! a hash of its resolved dependencies), recorded in run.json `loadgen_identity`, so runs
//! made at two commits that left loadgen alone compare, and a run whose loadgen changed is
//! refused, saying which part changed.
//!
//! Runs recorded before the identity existed have only `loadgen_version`, which was either
//! "loadgen 0.1.0" or, later, the build stamp (the repository's commit — which differs for
//! every commit, so it cannot tell a change of method from an unrelated one). For those the
//! version number, where recorded, must still match; otherwise they are compared with a
//! warning that says the method was not checked and, where this checkout's git history has
//! both commits, whether `loadgen/` differs between them.

use std::process::Command;

use crate::results::schema::Environment;
use crate::results::untrusted;

/// The version number from `loadgen_version` ("loadgen 0.1.0" → "0.1.0"); None when it
/// recorded no number (a build-stamp line).
fn version_number(v: Option<&str>) -> Option<&str> {
    let rest = v?.strip_prefix("loadgen ")?;
    let first = rest.split_whitespace().next()?;
    (!first.starts_with("pingmatrix-build")).then_some(first)
}

/// Reasons the load generators differ in method (empty = same, or not known).
pub fn refusals(o: &Environment, n: &Environment) -> Vec<String> {
    let mut r = Vec::new();
    match (o.loadgen_identity.as_deref(), n.loadgen_identity.as_deref()) {
        (Some(a), Some(b)) if a != b => r.push(identity_difference(a, b)),
        (Some(_), Some(_)) => {}
        _ => {
            let (a, b) = (
                o.loadgen_identity
                    .as_deref()
                    .and_then(loadgen::identity::parse)
                    .map(|p| p.version)
                    .or(version_number(o.loadgen_version.as_deref())),
                n.loadgen_identity
                    .as_deref()
                    .and_then(loadgen::identity::parse)
                    .map(|p| p.version)
                    .or(version_number(n.loadgen_version.as_deref())),
            );
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                r.push(format!("load generator version differs: {a} vs {b}"));
            }
        }
    }
    r
}

/// Which parts of two identities differ, in words.
fn identity_difference(a: &str, b: &str) -> String {
    let (Some(pa), Some(pb)) = (loadgen::identity::parse(a), loadgen::identity::parse(b)) else {
        return format!("load generator method differs: {a} vs {b}");
    };
    let mut parts = Vec::new();
    if pa.version != pb.version {
        parts.push(format!("version {} vs {}", pa.version, pb.version));
    }
    if pa.src != pb.src {
        parts.push(format!(
            "its measuring code (loadgen/src) differs: src={} vs src={}",
            pa.src, pb.src
        ));
    }
    if pa.deps != pb.deps {
        parts.push(format!(
            "its locked dependencies differ: deps={} vs deps={}",
            pa.deps, pb.deps
        ));
    }
    format!("load generator method differs: {}", parts.join("; "))
}

/// What could not be checked: a side without an identity.
pub fn warnings(o: &Environment, n: &Environment) -> Vec<String> {
    let missing: Vec<&str> = [("old", o), ("new", n)]
        .iter()
        .filter(|(_, e)| e.loadgen_identity.is_none())
        .map(|(s, _)| *s)
        .collect();
    // Both built at one commit: the same loadgen, identity or not.
    let same_commit = matches!((commit(o), commit(n)), (Some(a), Some(b)) if a == b);
    if missing.is_empty() || same_commit {
        return Vec::new();
    }
    let mut w = format!(
        "load generator method unknown on the {} side (run.json predates loadgen's method \
         identity): compared without checking that loadgen measured the same way",
        missing.join(" and ")
    );
    if let (Some(a), Some(b)) = (commit(o), commit(n))
        && a != b
    {
        match loadgen_changed(&a, &b) {
            Some(true) => w.push_str(&format!(
                "; git: loadgen/ differs between {} and {}",
                short(&a),
                short(&b)
            )),
            Some(false) => w.push_str(&format!(
                "; git: loadgen/ is identical at {} and {}",
                short(&a),
                short(&b)
            )),
            None => {}
        }
    }
    vec![w]
}

fn short(c: &str) -> &str {
    &c[..c.len().min(7)]
}

/// The commit loadgen was built from: its stamp in `loadgen_version`, else the run's own.
fn commit(e: &Environment) -> Option<String> {
    e.loadgen_version
        .as_deref()
        .and_then(|v| pingmatrix_stamp::find(v.as_bytes()))
        .map(|b| b.commit)
        .or_else(|| e.source.git_commit.clone())
        .filter(|c| c != "unknown")
}

/// Whether `loadgen/` or Cargo.lock differ between two commits, per this checkout's git
/// (None: no checkout, or a commit it does not have).
fn loadgen_changed(a: &str, b: &str) -> Option<bool> {
    let dir = crate::binaries::exe_dir()?;
    loadgen_changed_in(&dir, a, b)
}

/// The git arguments of [`loadgen_changed`]: the commits are hex (checked when the result
/// set was loaded, and again here) and come after `--end-of-options`, so neither can be
/// taken for an option.
fn diff_args<'a>(a: &'a str, b: &'a str) -> Option<[&'a str; 8]> {
    untrusted::check_commit(a).ok()?;
    untrusted::check_commit(b).ok()?;
    Some([
        "diff",
        "--quiet",
        "--end-of-options",
        a,
        b,
        "--",
        ":(top)loadgen",
        ":(top)Cargo.lock",
    ])
}

fn loadgen_changed_in(dir: &std::path::Path, a: &str, b: &str) -> Option<bool> {
    let mut cmd = Command::new("git");
    cmd.arg("-C").arg(dir).args(diff_args(a, b)?);
    let (status, _) = crate::process::output_within(cmd, std::time::Duration::from_secs(5)).ok()?;
    match status.code() {
        Some(0) => Some(false),
        Some(1) => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_number_is_read_but_a_stamp_is_not_one() {
        assert_eq!(version_number(Some("loadgen 0.1.0")), Some("0.1.0"));
        assert_eq!(
            version_number(Some("loadgen pingmatrix-build commit=abc dirty=false;")),
            None
        );
        assert_eq!(version_number(None), None);
    }

    /// A run.json commit of `--output=<file>` used to reach `git diff` as an option, which
    /// truncated the file.
    #[test]
    fn a_recorded_commit_never_reaches_git_as_an_option() {
        let dir = std::env::temp_dir().join(format!("pingmatrix-method-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let evil = format!("--output={}", victim.display());
        assert_eq!(diff_args(&evil, "abcdef0"), None);
        assert_eq!(diff_args("abcdef0", &evil), None);
        // Even where git runs, in a checkout of its own: nothing is written.
        let git = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(args)
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        if git(&["init", "-q"]) {
            let _ = loadgen_changed_in(&dir, &evil, "HEAD");
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let args = diff_args("abcdef0", "1234567").unwrap();
        let eoo = args.iter().position(|a| *a == "--end-of-options").unwrap();
        assert!(eoo < args.iter().position(|a| *a == "abcdef0").unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_refusal_names_the_part_that_changed() {
        let a = "loadgen 0.1.0 src=aaaa deps=dddd";
        let src = identity_difference(a, "loadgen 0.1.0 src=bbbb deps=dddd");
        assert!(src.contains("measuring code (loadgen/src) differs: src=aaaa vs src=bbbb"));
        assert!(!src.contains("dependencies"));
        let deps = identity_difference(a, "loadgen 0.1.0 src=aaaa deps=eeee");
        assert!(deps.contains("locked dependencies differ") && !deps.contains("loadgen/src"));
    }
}
