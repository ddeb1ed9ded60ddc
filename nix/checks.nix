# `nix flake check`: the same gates as scripts/test.sh, plus a functional smoke run
# of the matrix inside the build sandbox (loopback only; io_uring may be missing
# there, and the monoio service must then fall back to epoll and say so).
{ pkgs, source, workspace, matrix, nixFiles }:
let
  rust = pkgs.rustPlatform;
  common = {
    inherit (source) version src;
    cargoLock.lockFile = source.lockFile;
  };
  # A cargo subcommand run over the vendored dependencies instead of `cargo build`.
  cargoGate = pname: tool: command: rust.buildRustPackage (common // {
    inherit pname;
    nativeBuildInputs = [ tool ];
    auditable = false;
    doCheck = false;
    buildPhase = ''
      runHook preBuild
      ${command}
      runHook postBuild
    '';
    installPhase = "touch $out";
  });
in
{
  build = workspace;

  # End-to-end tests start the real binaries from the target dir next to the test
  # executable; the build phase (`cargo build --workspace --bins`, same profile and
  # target as `cargo test`) puts them there first.
  tests = rust.buildRustPackage (common // {
    pname = "pingmatrix-tests";
    cargoBuildFlags = [ "--workspace" "--bins" ];
    cargoTestFlags = [ "--workspace" ];
    nativeCheckInputs = [ pkgs.util-linux ];
    doCheck = true;
  });

  clippy = cargoGate "pingmatrix-clippy" pkgs.clippy
    "cargo clippy --workspace --all-targets --offline --locked -- -D warnings";

  fmt = cargoGate "pingmatrix-fmt" pkgs.rustfmt "cargo fmt --all --check";

  nix-fmt = pkgs.runCommand "pingmatrix-nix-fmt" { nativeBuildInputs = [ pkgs.nixpkgs-fmt ]; } ''
    nixpkgs-fmt --check ${builtins.concatStringsSep " " nixFiles}
    touch $out
  '';

  smoke = pkgs.runCommand "pingmatrix-smoke" { nativeBuildInputs = [ matrix ]; } ''
    export HOME=$TMPDIR
    config="${if source.defaultMatrix == null then "" else "${source.defaultMatrix}"}"
    if [ -z "$config" ]; then
      echo "smoke: matrix.toml is missing at the flake root" >&2
      exit 1
    fi
    matrix run --quick --config "$config" --out "$out/results"
    if ! find "$out/results" -type f -name '*.json' | grep -q .; then
      echo "smoke: matrix run --quick wrote no JSON result" >&2
      exit 1
    fi
  '';
}
