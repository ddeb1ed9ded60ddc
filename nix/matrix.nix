# `matrix` with everything it drives on PATH (the services and loadgen next to it,
# wrk for cross-checks, taskset for CPU pinning) and the Nix provenance the runner
# records in every result.
#
# With no arguments it runs the default matrix: ./matrix.toml when the current
# directory has one, else the flake's own copy; results go under ./results/.
{ pkgs, workspace, defaultMatrix, flakeRev, nixpkgsRev }:
let
  fallbackMatrix = if defaultMatrix == null then "" else "${defaultMatrix}";
in
pkgs.writeShellApplication {
  name = "matrix";
  runtimeInputs = [ workspace pkgs.wrk pkgs.util-linux pkgs.coreutils ];
  runtimeEnv = {
    PINGMATRIX_FLAKE_REV = flakeRev;
    PINGMATRIX_NIXPKGS_REV = nixpkgsRev;
  };
  text = ''
    if [ "$#" -eq 0 ]; then
      config=matrix.toml
      if [ ! -f "$config" ]; then
        config="${fallbackMatrix}"
      fi
      if [ -z "$config" ]; then
        echo "matrix: no ./matrix.toml here and the flake ships none; pass --config" >&2
        exit 2
      fi
      out="results/$(date -u +%Y%m%dT%H%M%SZ)"
      echo "matrix: no arguments given: running $config, writing $out" >&2
      set -- run --config "$config" --out "$out"
    fi
    exec "${workspace}/bin/matrix" "$@"
  '';
  meta.description = "Run the pingmatrix benchmark matrix (services, loadgen and wrk on PATH)";
}
