//! results.md's "Variants" table: for every service variant of the run (run.json
//! `environment.variants`), what it was built from — revision and commit, the pins, the
//! runtime crates as resolved in its own Cargo.lock — its binary's sha256, and whether the
//! build was cached or failed. Their verdicts are those of any service against the
//! baseline (the table above it).

use std::fmt::Write as _;

use crate::results::schema::RunRecord;
use crate::results::variants::VariantRecord;

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
    // Each variant's own: the commit it stamps (and so the command) differs per revision.
    let _ = writeln!(o, "\nBuild commands (each in its variant's tree):\n");
    for v in vs {
        let _ = writeln!(o, "- {}: `{}`", v.service, v.build_command);
    }
    let _ = writeln!(o);
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
            pins: Default::default(),
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
    fn a_run_without_variants_has_no_section() {
        let mut o = String::new();
        table(&mut o, &[]);
        assert!(o.is_empty());
    }
}
