# `matrix` with everything it drives on PATH (the services and loadgen next to it,
# wrk for cross-checks, taskset for CPU pinning) and the Nix provenance the runner
# records in every result.
#
# With no arguments (or only options, e.g. `nix run .#matrix -- --quick`) it runs the
# default matrix: ./matrix.toml when the current directory has one, else the flake's
# own copy; results go to ./results/<run-id>/ (the runner names the run directory).
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
    case "''${1:-}" in
      -h | --help | -V | --version) exec "${workspace}/bin/matrix" "$@" ;;
    esac
    # No subcommand (no arguments, or only options such as --quick): `run` the default
    # matrix, adding --config and --out unless the caller gave them.
    if [ "$#" -eq 0 ] || [ "''${1#-}" != "$1" ]; then
      has_config=false has_out=false
      for arg in "$@"; do
        case "$arg" in
          --config | --config=*) has_config=true ;;
          --out | --out=*) has_out=true ;;
        esac
      done
      defaults=()
      if [ "$has_config" = false ]; then
        config=matrix.toml
        [ -f "$config" ] || config="${fallbackMatrix}"
        if [ -z "$config" ]; then
          echo "matrix: no ./matrix.toml here and the flake ships none; pass --config" >&2
          exit 2
        fi
        defaults+=(--config "$config")
      fi
      if [ "$has_out" = false ]; then
        defaults+=(--out results)
      fi
      echo "matrix: running: matrix run ''${defaults[*]} $*" >&2
      set -- run "''${defaults[@]}" "$@"
    fi
    exec "${workspace}/bin/matrix" "$@"
  '';
  meta.description = "Run the pingmatrix benchmark matrix (services, loadgen and wrk on PATH)";
}
