//! results.md's "Variants" table: for every service variant of the run (run.json
//! `environment.variants`), what it was built from — revision and commit, the pins, the
//! runtime crates as resolved in its own Cargo.lock — its binary's sha256, and whether the
//! build was cached or failed. Their verdicts are those of any service against the
//! baseline (the table above it).

use std::fmt::Write as _;

use crate::results::schema::RunRecord;

pub fn section(o: &mut String, run: &RunRecord) {
    let vs = &run.environment.variants;
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
    let _ = writeln!(
        o,
        "\nBuild command (in each variant's tree): `{}`\n",
        vs[0].build_command
    );
}
