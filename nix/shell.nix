# `nix develop`: the pinned toolchain (the same rustc the packages are built with),
# the load and profiling tools the benchmark scripts use, and the Nix formatter.
{ pkgs }:
pkgs.mkShell {
  packages = [
    pkgs.rustc
    pkgs.cargo
    pkgs.clippy
    pkgs.rustfmt
    pkgs.rust-analyzer
    pkgs.cargo-nextest
    pkgs.wrk
    pkgs.oha
    pkgs.hyperfine
    pkgs.jq
    pkgs.perf
    pkgs.util-linux
    pkgs.nixpkgs-fmt
  ];
  # rust-analyzer and go-to-definition into std.
  RUST_SRC_PATH = "${pkgs.rustPlatform.rustLibSrc}";
}
