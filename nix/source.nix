# What the Rust builds see, and the facts read from the repository's own files.
#
# The source is the repository minus files that cannot change a binary (Nix files,
# docs, CI, committed results), so editing those keeps the binaries' store paths,
# and "same store path" keeps meaning "same binaries".
{ lib, root }:
let
  fs = lib.fileset;
  cargoToml = builtins.fromTOML (builtins.readFile (root + "/Cargo.toml"));
  toolchainToml = builtins.fromTOML (builtins.readFile (root + "/rust-toolchain.toml"));
  notInBuild = map (name: fs.maybeMissing (root + "/${name}")) [
    "flake.nix"
    "flake.lock"
    "nix"
    ".ci"
    "scripts"
    "results"
    "README.md"
  ];
  src = fs.toSource {
    inherit root;
    fileset = fs.difference root (fs.unions notInBuild);
  };
in
{
  inherit src;

  inherit (cargoToml.workspace.package) version;

  lockFile = root + "/Cargo.lock";

  # The only Rust version the flake accepts (asserted against pkgs.rustc.version).
  toolchainChannel = toolchainToml.toolchain.channel;

  # The flake's own copy of the default matrix, for `nix run .#matrix` outside a
  # checkout and for checks.smoke; null while the file is missing. Taken from `src`
  # so that the Cargo.lock the binaries were built from sits next to it, where the
  # runner looks for it when recording provenance.
  defaultMatrix =
    if builtins.pathExists (root + "/matrix.toml") then "${src}/matrix.toml" else null;
}
