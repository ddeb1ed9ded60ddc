//! Nix provenance: the flake wrapper exports its own and nixpkgs' revisions.

use crate::results::schema::Provenance;

pub fn provenance() -> Provenance {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let flake = var("PINGMATRIX_FLAKE_REV");
    let nixpkgs = var("PINGMATRIX_NIXPKGS_REV");
    Provenance {
        via_nix_flake: flake.is_some(),
        note: if flake.is_some() {
            "run through the Nix flake wrapper".into()
        } else {
            "not run through the flake".into()
        },
        flake_rev: flake,
        nixpkgs_rev: nixpkgs,
    }
}
