//! results.md's "Variants" table: for every service variant of the run (run.json
//! `environment.variants`), what it was built from — revision and commit, the pins, the
//! runtime crates as resolved in its own Cargo.lock — its binary's sha256, and whether the
//! build was cached or failed. Their verdicts are those of any service against the
//! baseline (the table above it).

use std::fmt::Write as _;

use crate::results::schema::RunRecord;
use crate::results::variants::{PatchRecord, VariantRecord};

pub fn section(o: &mut String, run: &RunRecord) {
    table(o, &run.environment.variants);
}

fn table(o: &mut String, vs: &[VariantRecord]) {
    if vs.is_empty() {
        return;
    }
    let _ = writeln!(o, "## Variants\n");
    let _ = writeln!(
        o,
        "Each built from its own source tree (the revision's files, pins resolved into its own Cargo.lock) and run as a service of its own, interleaved with the others; its verdict against the baseline is in the table above.\n"
    );
    let _ = writeln!(
        o,
        "| service | rev → commit | pinned | resolved (its Cargo.lock) | binary sha256 | build |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for v in vs {
        let pins = if v.pins.is_empty() {
            "–".to_string()
        } else {
            v.pins
                .iter()
                .map(|(k, ver)| format!("{k} {ver}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let resolved = v
            .resolved
            .iter()
            .map(|(k, vers)| format!("{k} {}", vers.join("/")))
            .collect::<Vec<_>>()
            .join(", ");
        let build = match &v.error {
            Some(e) => format!("✗ {e}"),
            None if v.cached => "cached".into(),
            None => "built".into(),
        };
        let _ = writeln!(
            o,
            "| {} | `{}` → `{}` | {pins} | {resolved} | {} | {} |",
            v.service,
            v.rev,
            &v.commit[..v.commit.len().min(12)],
            v.binary_sha256
                .as_deref()
                .map_or("–".to_string(), |s| format!(
                    "`{}`",
                    &s[..s.len().min(16)]
                )),
            build.replace('|', "\\|")
        );
    }
    // Only runs with a patch have this list (the table above is unchanged for the others).
    if vs.iter().any(|v| !v.patches.is_empty()) {
        let _ = writeln!(
            o,
            "\nDependency sources (`patch`: `[patch.crates-io]` in the variant's tree):\n"
        );
        for v in vs {
            for (k, p) in &v.patches {
                let _ = writeln!(o, "- {}: {}", v.service, patch_text(k, p));
            }
        }
    }
    // Each variant's own: the commit it stamps (and so the command) differs per revision.
    let _ = writeln!(o, "\nBuild commands (each in its variant's tree):\n");
    for v in vs {
        let _ = writeln!(o, "- {}: `{}`", v.service, v.build_command);
    }
    let _ = writeln!(o);
}

/// "httparse from git `file:///x` @ `head` → `0123456789ab`", "tokio from path `../t` at
/// `0123456789ab` (dirty), files sha256 `…`".
pub fn patch_text(krate: &str, p: &PatchRecord) -> String {
    let short = |c: &str| c[..c.len().min(12)].to_string();
    let mut t = match (&p.path, &p.git) {
        (Some(path), _) => format!("{krate} from path `{path}`"),
        (None, Some(url)) => format!(
            "{krate} from git `{url}` @ `{}`",
            p.rev.as_deref().unwrap_or("?")
        ),
        (None, None) => format!("{krate} from {}", p.source),
    };
    match (&p.path, &p.commit) {
        (Some(_), Some(c)) => {
            let _ = write!(
                t,
                " at `{}`{}",
                short(c),
                if p.dirty == Some(true) {
                    " (dirty)"
                } else {
                    ""
                }
            );
        }
        (None, Some(c)) => {
            let _ = write!(t, " → `{}`", short(c));
        }
        (_, None) => {}
    }
    if let Some(h) = &p.content_sha256 {
        let _ = write!(t, ", files sha256 `{}`", &h[..h.len().min(16)]);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(variant: &str, commit: &str) -> VariantRecord {
        VariantRecord {
            service: format!("ping-x@{variant}"),
            base: "ping-x".into(),
            variant: variant.into(),
            rev: commit.into(),
            commit: commit.into(),
            source_repo: String::new(),
            pins: Default::default(),
            patches: Default::default(),
            resolved: [("tokio".to_string(), vec!["1.50.0".to_string()])].into(),
            cargo_lock_sha256: "00".into(),
            cache_key: "k".into(),
            build_command: format!("PINGMATRIX_GIT_COMMIT={commit} cargo build"),
            cached: false,
            binary: Some("b".into()),
            binary_sha256: Some("ab".repeat(32)),
            error: None,
        }
    }

    #[test]
    fn every_variant_shows_its_own_build_command() {
        let mut o = String::new();
        table(&mut o, &[record("a", "1111"), record("b", "2222")]);
        assert!(
            o.contains("- ping-x@a: `PINGMATRIX_GIT_COMMIT=1111 cargo build`"),
            "{o}"
        );
        assert!(
            o.contains("- ping-x@b: `PINGMATRIX_GIT_COMMIT=2222 cargo build`"),
            "{o}"
        );
        assert!(o.contains("| tokio 1.50.0 |"), "{o}");
    }

    #[test]
    fn patched_variants_list_their_sources_and_the_others_do_not() {
        let mut o = String::new();
        table(&mut o, &[record("a", "1111")]);
        assert!(!o.contains("Dependency sources"), "{o}");
        let mut r = record("b", "2222");
        r.patches.insert(
            "httparse".into(),
            PatchRecord {
                source: "git".into(),
                path: None,
                git: Some("file:///src/httparse".into()),
                rev: Some("head".into()),
                commit: Some("0123456789abcdef".into()),
                dirty: None,
                content_sha256: None,
            },
        );
        let mut o = String::new();
        table(&mut o, &[r]);
        assert!(
            o.contains(
                "- ping-x@b: httparse from git `file:///src/httparse` @ `head` → `0123456789ab`"
            ),
            "{o}"
        );
        let p = PatchRecord {
            source: "path".into(),
            path: Some("../t".into()),
            git: None,
            rev: None,
            commit: Some("ab".repeat(20)),
            dirty: Some(true),
            content_sha256: Some("cd".repeat(32)),
        };
        assert_eq!(
            patch_text("tokio", &p),
            "tokio from path `../t` at `abababababab` (dirty), files sha256 `cdcdcdcdcdcdcdcd`"
        );
    }

    #[test]
    fn a_run_without_variants_has_no_section() {
        let mut o = String::new();
        table(&mut o, &[]);
        assert!(o.is_empty());
    }
}
