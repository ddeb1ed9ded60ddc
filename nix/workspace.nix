# Every binary of the workspace (the three services, loadgen, matrix) from one
# `cargo build --release --workspace --bins`: one invocation, one [profile.release],
# so no service is built differently from another.
{ pkgs, source }:
pkgs.rustPlatform.buildRustPackage {
  pname = "pingmatrix";
  inherit (source) version src;
  cargoLock.lockFile = source.lockFile;
  cargoBuildFlags = [ "--workspace" "--bins" ];
  # Tests run in checks.tests; keeping them out of here keeps `nix build` short.
  doCheck = false;
  meta = {
    description = "pingmatrix services, load generator and matrix runner";
    mainProgram = "matrix";
  };
}
